// SPDX-License-Identifier: Apache-2.0

//go:build reliability

package reliability_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// TestScaleUpDuringBackendOutage (a bad case): the backend is down, the
// relays' queues fill and the HPA adds replicas, whose queues fill too. With the
// queues full every relay refuses, and only with a status fluent-bit retries
// (503); once the backend is back every acknowledged record arrives and every
// relay's queue drains to empty.
//
// The queue bound is 1 MiB per signal (the default is 512 MiB) so that four
// relays fill in seconds; what fills is the same persistent queue.
func TestScaleUpDuringBackendOutage(t *testing.T) {
	const queueBytes = 1 << 20
	f := newFleet(t, 4, "RELAY_MAX_CONNECTION_AGE=3s", fmt.Sprintf("OTEL_EXPORTER_DEFAULT_QUEUE_BYTES=%d", queueBytes))
	f.sink.Refuse(true)
	f.start(t, 0)
	f.start(t, 1)
	f.route(0, 1)

	// 20,000 records (~22 MiB decoded): far more than four 1 MiB queues hold, so
	// the sender is still pushing against full queues when the backend returns.
	const total = 20000
	chunks := e2e.EncodeChunks(0, total/100, 100)
	s := f.sender(6, 2000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Send(ctx, chunks)

	f.waitFull(t, []int{0, 1}, queueBytes)

	// The HPA scales up (CPU is high: the relays are busy refusing); the new
	// pods become endpoints and, through connection recycling, get senders too.
	f.start(t, 2)
	f.start(t, 3)
	f.route(0, 1, 2, 3)
	f.waitFull(t, []int{2, 3}, queueBytes)
	for i, c := range f.cols {
		if !c.Running() {
			t.Fatalf("relay %d exited with its queue full:\n%s", i, e2e.Tail(c.Output(), 4000))
		}
	}
	if got := f.sink.LogRecordCount(); got != 0 {
		t.Fatalf("the backend refused everything, yet %d records arrived", got)
	}
	outage := s.Stats()
	t.Logf("outage: %d records acknowledged into the queues, statuses per attempt %v", s.AckedRecords(), outage.Statuses)
	if outage.Statuses[http.StatusServiceUnavailable] == 0 {
		t.Errorf("no 503 during the outage although every queue was full: statuses %v", outage.Statuses)
	}

	// The backend comes back: the queues drain, the sender's retries get through.
	recovered := time.Now()
	f.sink.Refuse(false)
	if !otlpfixture.WaitFor(3*time.Minute, func() bool { return s.AckedRecords() == total }) {
		t.Errorf("after the backend came back only %d of %d records were acknowledged", s.AckedRecords(), total)
	}
	settle(t, cancel, s, 2*time.Minute) // fails on any status fluent-bit does not retry
	rep := expectDelivered(t, f.sink, s.Acked(), 3*time.Minute)
	t.Logf("scale-up during an outage: %s, %s after the backend returned", rep, time.Since(recovered).Round(100*time.Millisecond))

	for i := range f.gws {
		if !otlpfixture.WaitFor(time.Minute, func() bool { return e2e.LogQueueBytes(f.gws[i].MetricsAddr) == 0 }) {
			t.Errorf("relay %d: logs queue still holds %.0f bytes a minute after delivery", i, e2e.LogQueueBytes(f.gws[i].MetricsAddr))
		}
		f.stop(t, i)
		left, err := e2e.ReadQueueDir(f.gws[i].QueueDir)
		if err != nil {
			t.Fatalf("relay %d queue: %v", i, err)
		}
		if left.Requests != 0 {
			t.Errorf("relay %d: %d requests (%d bytes) left in its queue directory: %v", i, left.Requests, left.Bytes, left.Files)
		}
	}
}

// waitFull waits until each of relays holds nearly a full logs queue and has
// refused records because of it.
func (f *fleet) waitFull(t *testing.T, relays []int, queueBytes float64) {
	t.Helper()
	state := func(i int) (queued, refused float64) {
		return e2e.LogQueueBytes(f.gws[i].MetricsAddr), e2e.MetricSum(f.gws[i].MetricsAddr, "otelcol_receiver_refused_log_records")
	}
	full := func() bool {
		for _, i := range relays {
			// A 100-record chunk is ~110 KB: the next one does not fit past 80%.
			if q, r := state(i); q < 0.8*queueBytes || r <= 0 {
				return false
			}
		}
		return true
	}
	ok := otlpfixture.WaitFor(2*time.Minute, full)
	var parts []string
	for _, i := range relays {
		q, r := state(i)
		parts = append(parts, fmt.Sprintf("relay %d: queue %.0f of %.0f bytes, refused %.0f records", i, q, queueBytes, r))
	}
	t.Logf("queues: %s", strings.Join(parts, "; "))
	if !ok {
		t.Fatalf("the queues of relays %v did not fill within 2m", relays)
	}
}
