// SPDX-License-Identifier: Apache-2.0

// Package testvolume mounts small real filesystems for tests that depend on how a
// volume reports its space (statfs), without the end-to-end harness's weight.
package testvolume

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// Ext4 mounts a fresh ext4 filesystem of sizeMiB with reservePct percent of its
// blocks reserved for root, and returns its mount point. It skips where the test
// may not mount a loop device (not root, no loop devices, no mkfs.ext4).
func Ext4(t testing.TB, sizeMiB, reservePct int) string {
	t.Helper()
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "fs.img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, int64(sizeMiB)<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", strconv.Itoa(reservePct), img).CombinedOutput(); err != nil {
		t.Skipf("cannot make an ext4 filesystem here: %v %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a loop device here (needs root): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	return mnt
}
