// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package safeconfigconverter

// volumeSize is not measured off Linux, the only platform the image runs on.
func volumeSize(string) (uint64, string, bool) { return 0, "", false }
