package e2e

import "testing"

// StartCommand runs name with args instead of the binary itself, for when the
// collector must be started through a wrapper (for example a shell that first
// enters a memory cgroup and then execs the binary). It returns without waiting for
// readiness; the process is stopped when the test ends and its output is logged if
// the test failed.
func StartCommand(t testing.TB, name string, args []string, env []string) *Collector {
	t.Helper()
	return launch(t, name, args, env, "")
}
