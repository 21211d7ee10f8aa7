// SPDX-License-Identifier: Apache-2.0

package safeconfigconverter

import (
	"os"
	"path/filepath"
	"syscall"
)

// volumeSize measures the filesystem that holds dir, or that will once
// file_storage creates it: the nearest existing ancestor is on the same volume
// (in Kubernetes, the mounted PVC). It counts the blocks the collector's uid can
// fill: all of them but those reserved for root (Bfree - Bavail; ext4 keeps 5%
// by default). Not plain Bavail: that would count the queue files already on
// the volume against their own bounds and refuse a restart with a full queue.
func volumeSize(dir string) (uint64, string, bool) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			var st syscall.Statfs_t
			if syscall.Statfs(d, &st) != nil {
				return 0, "", false
			}
			var reserved uint64
			if st.Bfree > st.Bavail { // some filesystems (btrfs) estimate Bavail above Bfree
				reserved = st.Bfree - st.Bavail
			}
			return (st.Blocks - reserved) * uint64(st.Bsize), d, true
		}
		if parent := filepath.Dir(d); parent == d {
			return 0, "", false
		}
	}
}
