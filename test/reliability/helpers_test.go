// SPDX-License-Identifier: Apache-2.0

//go:build reliability

package reliability_test

import (
	"context"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/scenario"
)

// rig is one gateway in front of a TLS backend sink (scenario.Rig), with the
// short names these tests use.
type rig struct {
	*scenario.Rig
	sink *otlpfixture.Sink
	gw   *e2e.Gateway
	rcv  *e2e.ReceiverTLS
}

func newRig(t *testing.T, queueDir string, env ...string) *rig {
	t.Helper()
	r := scenario.NewRig(t, scenario.RigOptions{QueueDir: queueDir, Env: env})
	return &rig{Rig: r, sink: r.Sink, gw: r.GW, rcv: r.Rcv}
}

// start runs the gateway binary directly (same ports and queue directory every time).
func (r *rig) start(t *testing.T) *e2e.Collector {
	t.Helper()
	return r.Start(t)
}

func (r *rig) sender(workers int, rate float64) *e2e.Sender { return r.Sender(workers, rate) }

// settle stops feeding, lets the sender finish retrying what it holds, and fails
// the test if a chunk was dropped (a non-retryable status) or never acknowledged.
func settle(t *testing.T, cancel context.CancelFunc, s *e2e.Sender, timeout time.Duration) e2e.SenderStats {
	t.Helper()
	return scenario.Settle(t, cancel, s, timeout)
}

// expectDelivered waits until every acknowledged record reached the sink, then
// fails on any missing one and reports duplicates (at-least-once allows them).
func expectDelivered(t *testing.T, sink *otlpfixture.Sink, acked []int64, timeout time.Duration) otlpfixture.LossReport {
	t.Helper()
	return scenario.ExpectDelivered(t, sink, acked, timeout)
}
