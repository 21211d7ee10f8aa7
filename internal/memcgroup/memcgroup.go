// SPDX-License-Identifier: Apache-2.0

// Package memcgroup creates memory cgroups (v1 or v2) for tests, so a process
// can run under a real memory limit, as in a container with
// resources.limits.memory. It is light enough for unit tests.
package memcgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// Cgroup is a memory cgroup the test created, with a limit.
type Cgroup struct {
	Dir   string
	Limit int64
	v2    bool
}

// New creates a child memory cgroup of this process's own, limited to limit
// bytes without swap, and removes it when the test ends. It skips the test when
// the machine does not let it (not root, no writable memory controller).
func New(t tb.T, limit int64) *Cgroup {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skipf("no /proc/self/cgroup: %v", err)
	}
	cg := &Cgroup{Limit: limit}
	var parent string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case slices.Contains(strings.Split(parts[1], ","), "memory"): // cgroup v1 (also hybrid)
			parent = filepath.Join("/sys/fs/cgroup/memory", parts[2])
		case parts[0] == "0" && parent == "":
			if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
				parent, cg.v2 = filepath.Join("/sys/fs/cgroup", parts[2]), true
			}
		}
	}
	if parent == "" {
		t.Skip("no memory cgroup controller found")
	}
	cg.Dir = filepath.Join(parent, fmt.Sprintf("otelcol-relay-test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(cg.Dir, 0o755); err != nil {
		t.Skipf("cannot create a memory cgroup: %v", err)
	}
	t.Cleanup(func() {
		// Processes started in it are stopped by their own (earlier) cleanups.
		deadline := time.Now().Add(30 * time.Second)
		for os.Remove(cg.Dir) != nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
	})
	limitFile := "memory.limit_in_bytes"
	if cg.v2 {
		limitFile = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(cg.Dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		t.Skipf("cannot set %s: %v", limitFile, err)
	}
	if !cg.v2 {
		// No swap: the limit is the limit, as in a Kubernetes pod.
		_ = os.WriteFile(filepath.Join(cg.Dir, "memory.memsw.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644)
	}
	return cg
}

// Command returns the argv of a shell that enters the cgroup and then execs
// name with args, so the limit applies from the first allocation on.
func (cg *Cgroup) Command(name string, args ...string) []string {
	return append([]string{"sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg.Dir, name}, args...)
}

// OOMKills is how many processes the kernel OOM-killed in the cgroup.
func (cg *Cgroup) OOMKills() int {
	file := "memory.oom_control"
	if cg.v2 {
		file = "memory.events"
	}
	raw, _ := os.ReadFile(filepath.Join(cg.Dir, file))
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "oom_kill" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// PeakUsage is the cgroup's memory high-water mark (RSS and page cache), bytes.
func (cg *Cgroup) PeakUsage() int64 {
	file := "memory.max_usage_in_bytes"
	if cg.v2 {
		file = "memory.peak"
	}
	raw, _ := os.ReadFile(filepath.Join(cg.Dir, file))
	n, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	return n
}
