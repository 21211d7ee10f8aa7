package e2e

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// StartCommand runs name with args instead of the binary itself, for when the
// collector must be started through a wrapper (for example a shell that first
// enters a memory cgroup and then execs the binary). It returns without waiting for
// readiness; the process is stopped when the test ends and its output is logged if
// the test failed.
func StartCommand(t testing.TB, name string, args []string, env []string) *Collector {
	t.Helper()
	c := &Collector{t: t, out: &syncBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(name, args...)
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	c.cmd.Dir = t.TempDir()
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		c.exitErr = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		if c.Running() {
			_, _ = c.Stop(30 * time.Second)
		}
		if t.Failed() {
			t.Logf("%s output (pid %d):\n%s", name, c.cmd.Process.Pid, c.Output())
		}
	})
	return c
}
