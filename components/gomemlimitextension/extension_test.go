package gomemlimitextension

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.uber.org/zap"

	"github.com/otelcol-relay/otelcol-relay/internal/memcgroup"
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
func fakeProc(t *testing.T, mountinfo, cgroup string) paths {
	t.Helper()
	dir := t.TempDir()
	p := paths{mountinfo: filepath.Join(dir, "mountinfo"), cgroup: filepath.Join(dir, "cgroup"), meminfo: filepath.Join(dir, "meminfo")}
	write(t, p.mountinfo, mountinfo)
	write(t, p.cgroup, cgroup)
	write(t, p.meminfo, "MemTotal:        8000000 kB\nMemFree:  1 kB\n")
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
			got, _, err := totalMemory(fakeProc(t, tc.mountinfo, tc.cgroup))
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestExplicitGOMEMLIMITWins(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	g := &gomemlimit{cfg: &Config{LimitPercentage: 80}, logger: zap.NewNop(), paths: procPaths,
		getenv: func(k string) (string, bool) { return "300MiB", k == "GOMEMLIMIT" }}
	if err := g.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("limit changed to %d with GOMEMLIMIT set", got)
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []uint32{0, 101} {
		err := (&Config{LimitPercentage: p}).Validate()
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("limit_percentage: %d", p)) {
			t.Fatalf("%d: %v", p, err)
		}
	}
}

// TestHelperInCgroup is the child process of TestRealMemoryCgroup.
func TestHelperInCgroup(t *testing.T) {
	if os.Getenv("GOMEMLIMIT_HELPER") != "1" {
		t.Skip("helper process")
	}
	g := &gomemlimit{cfg: &Config{LimitPercentage: 80}, logger: zap.NewNop(), paths: procPaths, getenv: func(string) (string, bool) { return "", false }}
	if err := g.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("GOMEMLIMIT_BYTES=%d\n", debug.SetMemoryLimit(-1))
	_ = g.Shutdown(context.Background())
}

// TestRealMemoryCgroup runs the extension inside a real memory cgroup limited to
// 512 MiB: the Go limit must be memory_limiter's hard limit to the byte (80% of
// 536870912 = 429496729).
func TestRealMemoryCgroup(t *testing.T) {
	cg := memcgroup.New(t, 536870912)
	argv := cg.Command(os.Args[0], "-test.run=^TestHelperInCgroup$", "-test.v")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "GOMEMLIMIT_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "GOMEMLIMIT_BYTES=429496729\n") {
		t.Fatalf("want GOMEMLIMIT_BYTES=429496729 in:\n%s", out)
	}
}
