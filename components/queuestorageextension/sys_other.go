// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"errors"
	"os"
)

// queue_storage runs where the image runs, on Linux: its guarantees rest on
// fallocate, fdatasync and an exclusive lock (sys_linux.go). Elsewhere a store
// does not open, so no platform gets weaker guarantees without saying so; the
// rest only keeps the package building for tools and editors.
var errNotLinux = errors.New("queue_storage runs on Linux only (its space reservation and locking need Linux); use file_storage on this platform")

func lockFile(*os.File) error { return errNotLinux }

func allocate(f *os.File, off, n int64) error { return f.Truncate(off + n) }

func punchHole(*os.File, int64, int64) bool { return false }

func fdatasync(f *os.File) error { return f.Sync() }

func pwritev(f *os.File, bufs [][]byte, off int64) (int, error) {
	n := 0
	for _, b := range bufs {
		m, err := f.WriteAt(b, off+int64(n))
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func volumeBytes(string) uint64 { return 0 }
