package safeconfigconverter

import (
	"os"
	"path/filepath"
	"syscall"
)

// volumeSize measures the filesystem that holds dir, or that will once
// file_storage creates it: the nearest existing ancestor is on the same volume
// (in Kubernetes, the mounted PVC).
func volumeSize(dir string) (uint64, string, bool) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			var st syscall.Statfs_t
			if syscall.Statfs(d, &st) != nil {
				return 0, "", false
			}
			return st.Blocks * uint64(st.Bsize), d, true
		}
		if parent := filepath.Dir(d); parent == d {
			return 0, "", false
		}
	}
}
