// SPDX-License-Identifier: Apache-2.0

package memtotal

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeProc writes mountinfo/cgroup/meminfo files describing a layout whose
// cgroup directories live under sys (mount points are rewritten into it).
func fakeProc(t *testing.T, mountinfo, cgroup string) Paths {
	t.Helper()
	dir := t.TempDir()
	p := Paths{Mountinfo: filepath.Join(dir, "mountinfo"), Cgroup: filepath.Join(dir, "cgroup"), Meminfo: filepath.Join(dir, "meminfo")}
	write(t, p.Mountinfo, mountinfo)
	write(t, p.Cgroup, cgroup)
	write(t, p.Meminfo, "MemTotal:        8000000 kB\nMemFree:  1 kB\n")
	return p
}

func TestParsesKernelLayouts(t *testing.T) {
	// Mount points must be absolute sysfs paths for the v2 rule; the v1 layouts
	// point into a temp dir instead, which is all the parsing needs.
	sys := t.TempDir()
	write(t, filepath.Join(sys, "memory/kubepods/pod1/ctr/memory.limit_in_bytes"), "536870912\n")
	write(t, filepath.Join(sys, "memory/unlimited/memory.limit_in_bytes"), "9223372036854771712\n")
	// What a container sees: its own cgroup is the root of the mount.
	write(t, filepath.Join(sys, "memory/memory.limit_in_bytes"), "536870912\n")
	v1 := func(root string) string {
		return fmt.Sprintf("35 31 0:32 %s %s/memory rw,relatime - cgroup cgroup rw,memory\n41 31 0:38 / %s/unified rw - cgroup2 cgroup2 rw\n", root, sys, sys)
	}
	for _, tc := range []struct {
		name, mountinfo, cgroup string
		want                    uint64
	}{
		{"hybrid host view", v1("/"), "4:memory:/kubepods/pod1/ctr\n0::/\n", 512 << 20},
		{"v1 container view (own cgroup mounted as /)", v1("/kubepods/pod1/ctr"), "4:memory:/kubepods/pod1/ctr\n", 512 << 20},
		{"v1 without a limit falls back to MemTotal", v1("/"), "4:memory:/unlimited\n", 8000000 * 1024},
		{"no memory controller falls back to MemTotal", "", "0::/\n", 8000000 * 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := Total(fakeProc(t, tc.mountinfo, tc.cgroup))
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
