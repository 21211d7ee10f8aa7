// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"path/filepath"
)

// DirBytes is the size of the files under dir (a queue directory on disk).
func DirBytes(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// MiB converts bytes to mebibytes for reports.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }
