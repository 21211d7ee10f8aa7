// SPDX-License-Identifier: Apache-2.0

// Package memtotal finds the memory this process may use, as memory_limiter's
// percentage mode finds it, so that what the distribution sizes from it
// (gomemlimit's Go memory limit, queue_storage's cache) names the same bytes.
package memtotal // import "github.com/otelcol-relay/otelcol-relay/components/internal/memtotal"

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// unlimitedV1 is what cgroup v1 reports for "no limit" (page-rounded MaxInt64).
const unlimitedV1 = 9223372036854771712

// Paths are the kernel files read; tests point them elsewhere only to exercise
// parsing, the real files are used everywhere else.
type Paths struct {
	Mountinfo, Cgroup, Meminfo string
}

// Proc are the real files.
var Proc = Paths{Mountinfo: "/proc/self/mountinfo", Cgroup: "/proc/self/cgroup", Meminfo: "/proc/meminfo"}

// Total returns the memory the process may use and where that figure came
// from, exactly as memory_limiter's percentage mode determines it: the cgroup v2
// limit when cgroup2 is mounted at /sys/fs/cgroup, else the cgroup v1 memory
// controller's limit (also in "hybrid" mode), else MemTotal from /proc/meminfo.
func Total(p Paths) (uint64, string, error) {
	mounts, err := readMounts(p.Mountinfo)
	if err != nil {
		return 0, "", err
	}
	groups, err := readCgroups(p.Cgroup)
	if err != nil {
		return 0, "", err
	}
	for _, m := range mounts {
		if m.fstype == "cgroup2" && m.point == "/sys/fs/cgroup" {
			file := filepath.Join(m.point, rel(m.root, groups[""]), "memory.max")
			if v, ok, err := readLimit(file, 0); err != nil || ok {
				return v, file, err
			}
			return meminfo(p.Meminfo)
		}
	}
	for _, m := range mounts {
		if m.fstype == "cgroup" && hasOption(m.super, "memory") {
			file := filepath.Join(m.point, rel(m.root, groups["memory"]), "memory.limit_in_bytes")
			if v, ok, err := readLimit(file, unlimitedV1); err != nil || ok {
				return v, file, err
			}
			break
		}
	}
	return meminfo(p.Meminfo)
}

type mount struct{ root, point, fstype, super string }

func readMounts(path string) ([]mount, error) {
	f, err := os.Open(path) //nolint:gosec // G304: /proc/self/mountinfo, or a test's fixture in its place
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	s := bufio.NewScanner(f)
	for s.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source super
		pre, post, ok := strings.Cut(s.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 {
			continue
		}
		out = append(out, mount{root: fields[3], point: fields[4], fstype: tail[0], super: tail[2]})
	}
	return out, s.Err()
}

// readCgroups maps each v1 controller (and "" for the v2 hierarchy) to the
// process's cgroup path.
func readCgroups(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path) //nolint:gosec // G304: /proc/self/cgroup, or a test's fixture in its place
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

// rel is the cgroup path inside a mount whose root is root (a container sees its
// own cgroup mounted as "/").
func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

func hasOption(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// readLimit reads a cgroup memory limit; ok is false for "no limit".
func readLimit(file string, unlimited uint64) (uint64, bool, error) {
	raw, err := os.ReadFile(file) //nolint:gosec // G304: a limit file under the process's own cgroup mount
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil // the root cgroup has no limit file
	}
	if err != nil {
		return 0, false, err
	}
	s := strings.TrimSpace(string(raw))
	if s == "max" {
		return 0, false, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %q is not a number of bytes", file, s)
	}
	if unlimited != 0 && v >= unlimited {
		return 0, false, nil
	}
	return v, true, nil
}

func meminfo(path string) (uint64, string, error) {
	raw, err := os.ReadFile(path) //nolint:gosec // G304: /proc/meminfo, or a test's fixture in its place
	if err != nil {
		return 0, "", err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseUint(f[0], 10, 64)
				return kb * 1024, path, err
			}
		}
	}
	return 0, "", fmt.Errorf("%s: no MemTotal line", path)
}
