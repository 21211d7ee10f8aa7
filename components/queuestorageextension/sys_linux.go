// SPDX-License-Identifier: Apache-2.0

//go:build linux

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The store's guarantees rest on these Linux calls: an exclusive lock on the
// directory, space allocated before it is written (a write inside a segment
// cannot then fail for lack of room), fdatasync, and one pwritev per record.

func lockFile(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

// allocate reserves n bytes of f from off. A filesystem without fallocate
// gets the file extended instead: nothing is reserved there, so a write into
// a segment can meet a full volume (it fails, and the caller is told).
func allocate(f *os.File, off, n int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, off, n)
	if errors.Is(err, syscall.EOPNOTSUPP) {
		return f.Truncate(off + n)
	}
	return err
}

// punchHole gives n bytes of f from off back to the filesystem, keeping the
// file's size; false where the filesystem cannot.
func punchHole(f *os.File, off, n int64) bool {
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n) == nil
}

func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

func pwritev(f *os.File, bufs [][]byte, off int64) (int, error) {
	return unix.Pwritev(int(f.Fd()), bufs, off)
}

// volumeBytes is the size of the filesystem that holds dir, counted as the
// startup check counts it (components/safeconfigconverter, statfs_linux.go):
// the blocks the collector's uid can fill, whether or not they are free now.
// 0 when it cannot tell.
func volumeBytes(dir string) uint64 {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0
	}
	var reserved uint64
	if st.Bfree > st.Bavail {
		reserved = st.Bfree - st.Bavail
	}
	return (st.Blocks - reserved) * uint64(st.Bsize)
}
