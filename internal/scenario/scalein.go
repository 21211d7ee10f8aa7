// SPDX-License-Identifier: Apache-2.0

package scenario

import (
	"context"
	"net/http"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// ScaleIn is the scale-in-during-an-outage scenario at one scale: three relays
// of one StatefulSet (otelcol-relay-0, -1, -2, each with its own queue
// directory), peers over one CA's mutual TLS as the cluster issues it
// (e2e.NewPeerTLS), with the backend down. Each relay queues a third of the
// records; then otelcol-relay-2,
// the ordinal a scale-in removes, is drained as the kubelet does it (preStop
// GET /drain, then SIGTERM) and hands its queue to a peer.
type ScaleIn struct {
	Records int     // sent in requests of 100, all acknowledged into the queues
	Rate    float64 // records/s offered; 0 is as fast as the relays answer
	Workers int
	// Outage is how long the backend stays down after the last record was
	// acknowledged and before the scale-in: long enough, and the exporters'
	// retries wait retry_on_failure::max_interval between attempts, which
	// the hand-off waits for too (it happens in the retried send).
	Outage time.Duration
	// StartAfter is peer_handoff's start_after: the time a drain gives the
	// backend first (none here: it is down).
	StartAfter time.Duration
	// DrainTimeout is the admission extension's drain budget.
	DrainTimeout time.Duration
	Settle       time.Duration // for the sender to finish retrying
	Deliver      time.Duration // for the backend to receive what was acknowledged
	MaxSeq       int64         // the sink's sequence bound (otlpfixture.SinkOptions.MaxSeq)
	// PeersFull says the peers' queues (OTEL_EXPORTER_DEFAULT_QUEUE_BYTES)
	// cannot take all of otelcol-relay-2's: they take what fits and refuse
	// the rest, the drain gives up with the rest on otelcol-relay-2's
	// volume, and otelcol-relay-2, started again on it once the backend is
	// back, delivers it.
	PeersFull bool
	Env       []string // added to every relay's environment
}

// fleet is three peer relays in front of one sink.
type fleet struct {
	sink *otlpfixture.Sink
	rcv  *e2e.ReceiverTLS
	gws  []*e2e.Gateway
	cols []*e2e.Collector
}

func newPeerFleet(t tb.T, n int, maxSeq int64, env ...string) *fleet {
	t.Helper()
	backend := e2e.NewBackendTLS(t, "default")
	f := &fleet{sink: e2e.NewSink(t, otlpfixture.SinkOptions{TLS: backend.Server, MaxSeq: maxSeq}), rcv: e2e.NewPeerTLS(t)}
	for range n {
		f.gws = append(f.gws, e2e.NewGateway(t, e2e.GatewayOptions{
			BackendURL: "https://" + f.sink.HTTPAddr, Backend: backend, Receiver: f.rcv, Env: env,
		}))
	}
	e2e.Peers(t, f.gws)
	f.cols = make([]*e2e.Collector, n)
	return f
}

func (f *fleet) metric(i int, name string) float64 {
	return max(0, e2e.MetricSum(f.gws[i].MetricsAddr, name))
}

// peers sums read over the relays that stay, otelcol-relay-0 and -1.
func (f *fleet) peers(read func(i int) float64) float64 { return read(0) + read(1) }

func (f *fleet) taken(i int) float64 { return f.metric(i, "otelcol_peer_handoff_taken_items") }

func (f *fleet) queued(i int) float64 { return e2e.LogQueueBytes(f.gws[i].MetricsAddr) }

// stop is the kubelet's SIGTERM after the hook, and what the relay left in
// its queue directory.
func (f *fleet) stop(t tb.T, i int) e2e.QueueContents {
	t.Helper()
	if code, err := f.cols[i].Stop(time.Minute); err != nil || code != 0 {
		t.Errorf("otelcol-relay-%d after SIGTERM: exit %d, %v", i, code, err)
	}
	left, err := e2e.ReadQueueDir(f.gws[i].QueueDir)
	if err != nil {
		t.Fatalf("otelcol-relay-%d queue: %v", i, err)
	}
	return left
}

// drainAndStop drains relay i with the backend up and stops it.
func (f *fleet) drainAndStop(t tb.T, i int) e2e.QueueContents {
	t.Helper()
	if code, body, err := f.gws[i].Drain(3 * time.Minute); err != nil || code != http.StatusOK {
		t.Errorf("otelcol-relay-%d did not drain with the backend up: %d %q, %v", i, code, body, err)
	}
	return f.stop(t, i)
}

// RunScaleInHandoff checks that a relay removed while the backend is down
// leaves nothing on its volume: its drain hands every queued request to a
// peer that stays, /drain answers drained, its queue directory is empty at
// exit (with PeersFull: what the peers could not take stays there, and is
// delivered once the ordinal runs again); that nothing a fluent-bit-like sender had acknowledged is lost once
// the backend returns (duplicates counted); and it measures the hand-off:
// records and MiB (uncompressed OTLP, the queue's bytes sizer) per second from
// the first request a peer stored to the drain's end.
func RunScaleInHandoff(t tb.T, o ScaleIn, res *Result) {
	t.Helper()
	f := newPeerFleet(t, 3, o.MaxSeq, append([]string{
		"RELAY_DRAIN_TIMEOUT=" + o.DrainTimeout.String(),
		"RELAY_HANDOFF_START_AFTER=" + o.StartAfter.String(),
	}, o.Env...)...)
	f.sink.Refuse(true)
	for i, g := range f.gws {
		f.cols[i] = g.Start(t)
	}

	// Each relay gets a third, as fluent-bit instances spread over the
	// Service's endpoints do.
	per := o.Records / 300
	res.Statuses = map[int]int{}
	var acked []int64
	for i, g := range f.gws {
		s := e2e.NewSender(e2e.SenderOptions{URL: g.HTTPURL + "/v1/logs", TLS: f.rcv.Client, Workers: o.Workers, Rate: o.Rate / 3})
		ctx, cancel := context.WithCancel(context.Background())
		s.Send(ctx, e2e.EncodeChunks(int64(i*per*100), per, 100))
		if !otlpfixture.WaitFor(o.Settle, func() bool { return s.AckedRecords() == per*100 }) {
			t.Errorf("with the backend down otelcol-relay-%d acknowledged %d of %d records in %s", i, s.AckedRecords(), per*100, o.Settle)
		}
		st := Settle(t, cancel, s, o.Settle)
		res.Acked += st.AckedRecords
		for code, n := range st.Statuses {
			res.Statuses[code] += n
		}
		acked = append(acked, s.Acked()...)
	}
	if got := f.sink.LogRecordCount(); got != 0 {
		t.Fatalf("the backend refused everything, yet %d records arrived", got)
	}
	queued := f.queued(2)
	accepted := f.metric(2, "otelcol_receiver_accepted_log_records")
	if queued <= 0 || accepted == 0 {
		t.Fatalf("otelcol-relay-2 queued %.0f bytes of %.0f records: the scenario needs a queue to hand off", queued, accepted)
	}
	time.Sleep(o.Outage)
	takenBefore, peersQueued := f.peers(f.taken), f.peers(f.queued)

	// The scale-in: the kubelet's preStop hook. Meanwhile, when the peers
	// first stored a request, how many records a second after that (the rate
	// the hand-off runs at), and when the last.
	watch := e2e.WatchCounter(func() (float64, bool) {
		v := e2e.MetricSum(f.gws[2].MetricsAddr, "otelcol_peer_handoff_sent_items")
		return v, v >= 0
	}, 100*time.Millisecond)
	drainStart := time.Now()
	code, body, err := f.gws[2].Drain(o.DrainTimeout + time.Minute)
	end := time.Now()
	rise := watch.Stop()
	sent := f.metric(2, "otelcol_peer_handoff_sent_items")
	failed := f.metric(2, "otelcol_peer_handoff_failed_attempts")
	left := f.stop(t, 2)
	taken := f.peers(f.taken) - takenBefore
	switch {
	case err != nil:
		t.Errorf("otelcol-relay-2 GET /drain: %v", err)
	case !o.PeersFull && (code != http.StatusOK || left.Requests != 0 || sent < accepted):
		t.Errorf("otelcol-relay-2 with the backend down and two peers with room: /drain %d %q, %.0f of %.0f records handed off, %d requests (%d bytes) left on its volume; want 200 (drained), all, none", code, body, sent, accepted, left.Requests, left.Bytes)
	case o.PeersFull && (code != http.StatusInternalServerError || left.Requests == 0 || failed == 0):
		t.Errorf("otelcol-relay-2 with the backend down and its peers' queues too small for its own: /drain %d %q, %.0f refused attempts, %d requests left on its volume; want 500 naming the leftover, refusals, and the rest kept", code, body, failed, left.Requests)
	}
	// The stayers hold it, in their own queues, until the backend is back.
	grown := f.peers(f.queued) - peersQueued
	if want := 0.9 * queued * sent / accepted; grown < want {
		t.Errorf("the peers' queues grew by %.0f bytes, want at least %.0f: what otelcol-relay-2 handed off is not in them", grown, want)
	}
	if taken != sent {
		t.Errorf("otelcol-relay-2 handed off %.0f records and its peers took %.0f: want the same (an item is deleted once a peer stored it)", sent, taken)
	}
	res.note(t, "backend down: %d records acknowledged by three relays, otelcol-relay-2 queued %.0f records (%.1f MiB); after %s more of the outage its drain ended %s after GET /drain (start_after %s), the peers took %.0f records, %d requests (%.1f MiB) left on its volume",
		res.Acked, accepted, queued/(1<<20), o.Outage, end.Sub(drainStart).Round(100*time.Millisecond), o.StartAfter, taken, left.Requests, float64(left.Bytes)/(1<<20))
	if !rise.First.IsZero() {
		// The queue's bytes are uncompressed OTLP, about the same per record.
		perRecord := queued / (1 << 20) / accepted
		mib, window := sent*perRecord, rise.Last.Sub(rise.First)
		res.note(t, "hand-off: first request stored %s after GET /drain; %.0f records (%.1f MiB) in the second after it; all %.0f records (%.1f MiB) in %s from the first to the last (%.0f records/s, %.1f MiB/s): the last waited for their exporter's next retry; %.0f attempts refused or failed",
			rise.First.Sub(drainStart).Round(100*time.Millisecond), rise.InFirstSecond, rise.InFirstSecond*perRecord,
			sent, mib, window.Round(100*time.Millisecond), sent/max(window.Seconds(), 0.1), mib/max(window.Seconds(), 0.1), failed)
	}
	if o.PeersFull {
		defer func() {
			if c := f.drainAndStop(t, 2); c.Requests != 0 {
				t.Errorf("otelcol-relay-2 restarted on its volume: %d requests left after its drain", c.Requests)
			}
		}()
	}

	// The backend returns; the peers deliver their own queues and what they took.
	recovered := time.Now()
	f.sink.Refuse(false)
	if o.PeersFull {
		f.cols[2] = f.gws[2].Start(t) // the ordinal runs again on its volume
	}
	rep := ExpectDelivered(t, f.sink, acked, o.Deliver)
	res.delivered(rep)
	res.note(t, "after the backend returned: %d received, %d missing, %d duplicated in %s",
		rep.Received, rep.Missing, rep.Duplicated, time.Since(recovered).Round(100*time.Millisecond))
	for _, i := range []int{0, 1} {
		if left := f.drainAndStop(t, i); left.Requests != 0 {
			t.Errorf("otelcol-relay-%d: %d requests left in its queue directory after its drain", i, left.Requests)
		}
	}
}
