// SPDX-License-Identifier: Apache-2.0

//go:build reliability

package reliability_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// TestScaleUpShareWithDefaultConnectionAge (as shipped):
// TestScaleOutAndIn checks the shares with a 3 s connection age to stay short;
// this runs the relays with config/gateway.yaml's own default (60 s), 1 -> 3
// relays under a steady load through the per-connection round-robin proxy. The
// load is six fluent-bit senders with one connection each, as six nodes'
// DaemonSet pods are: kube-proxy spreads connections, so what is spread is
// the senders. Within 2 minutes of the scale-up each relay receives at least 20%
// of the records, over a window that starts once every connection opened before
// the scale-up has reached the age and been closed.
//
// (One sender with several workers is not spread this way: Go's client, like
// the sender helper, reuses its most recently used idle connection, so at a
// few requests in flight one or two connections carry nearly everything and a
// relay holding an idle one gets almost nothing until the next recycle;
// measured: 65% / 34% / 1% in the window.)
func TestScaleUpShareWithDefaultConnectionAge(t *testing.T) {
	const age = 60 * time.Second // RELAY_MAX_CONNECTION_AGE's default, unset here
	f := newFleet(t, 3)
	f.start(t, 0)
	f.route(0)
	const nodes, rate = 6, 2000.0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var senders []*e2e.Sender
	for i := range nodes {
		// 140 s at rate/nodes each, sequence numbers disjoint per node.
		s := f.sender(1, rate/nodes)
		s.Send(ctx, e2e.EncodeChunks(int64(i)*1_000_000, 470, 100))
		senders = append(senders, s)
	}
	acked := func() (n int) {
		for _, s := range senders {
			n += s.AckedRecords()
		}
		return n
	}
	if !otlpfixture.WaitFor(time.Minute, func() bool { return acked() >= 5000 }) {
		t.Fatalf("load did not get going on one relay: acked %d", acked())
	}

	f.start(t, 1)
	f.start(t, 2)
	scaled := map[int]float64{0: f.accepted(0), 1: f.accepted(1), 2: f.accepted(2)}
	f.route(0, 1, 2)
	scaledAt := time.Now()

	// Every connection opened before the scale-up is at most `age` old now,
	// plus the request that notices it.
	time.Sleep(age + 5*time.Second)
	base := map[int]float64{0: f.accepted(0), 1: f.accepted(1), 2: f.accepted(2)}
	var since []string
	for i := range 3 {
		since = append(since, fmt.Sprintf("relay %d: %.0f", i, base[i]-scaled[i]))
	}
	t.Logf("records accepted in the %s after the scale-up (before every connection reached the age): %s", time.Since(scaledAt).Round(time.Second), strings.Join(since, ", "))
	f.shares(t, []int{0, 1, 2}, base, 0.2, 20000, time.Until(scaledAt.Add(2*time.Minute)))
	t.Logf("share check done %s after the scale-up", time.Since(scaledAt).Round(time.Second))

	cancel()
	var all []int64
	for _, s := range senders {
		settle(t, cancel, s, 2*time.Minute)
		all = append(all, s.Acked()...)
	}
	slices.Sort(all)
	expectDelivered(t, f.sink, all, 2*time.Minute)
}
