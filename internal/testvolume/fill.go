// SPDX-License-Identifier: Apache-2.0

package testvolume

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Fill allocates a ballast file on the volume at vol that leaves free bytes
// (0: the volume is full), as something else on the volume would.
func Fill(t testing.TB, vol string, free int64) {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(vol, &st); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(vol, "ballast"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n := int64(st.Bavail)*st.Bsize - free; n > 0 {
		if err := unix.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
			t.Fatalf("allocating %d bytes of ballast: %v", n, err)
		}
	}
}
