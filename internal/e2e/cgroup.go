// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/memcgroup"
	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// MemoryCgroup is a memory cgroup (internal/memcgroup) that a collector can be
// started in; the limit then applies as in a container with
// resources.limits.memory.
type MemoryCgroup struct{ *memcgroup.Cgroup }

// NewMemoryCgroup creates a child memory cgroup limited to limit bytes and
// removes it when the test ends; it skips the test when the machine does not
// let it.
func NewMemoryCgroup(t tb.T, limit int64) *MemoryCgroup {
	t.Helper()
	return &MemoryCgroup{memcgroup.New(t, limit)}
}

// Start runs the collector binary with args inside the cgroup (it enters the
// cgroup before exec, so the limit applies from its first allocation) and waits
// until it is ready.
func (cg *MemoryCgroup) Start(t tb.T, args, env []string) *Collector {
	t.Helper()
	c := cg.StartNoWait(t, args, env)
	if err := c.WaitForOutput(readyLine, 90*time.Second); err != nil {
		t.Fatalf("collector in cgroup did not become ready: %v\n%s", err, c.Output())
	}
	return c
}

// StartNoWait runs the collector binary with args inside the cgroup without
// waiting for readiness.
func (cg *MemoryCgroup) StartNoWait(t tb.T, args, env []string) *Collector {
	t.Helper()
	argv := cg.Command(Binary(t), args...)
	return StartCommand(t, argv[0], argv[1:], env)
}
