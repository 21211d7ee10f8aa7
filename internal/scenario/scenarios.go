// SPDX-License-Identifier: Apache-2.0

package scenario

import (
	"context"
	"net/http"
	"syscall"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// Overload is the overload scenario at one scale: the gateway runs inside a
// real memory cgroup (the StatefulSet's limit; memory_limiter and the
// gomemlimit extension size themselves from it) and many fluent-bit workers
// send as fast as it answers, or at Rate.
type Overload struct {
	Limit    int64       // the cgroup's memory limit, bytes
	Chunks   []e2e.Chunk // pre-encoded requests, offered in order
	Workers  int
	Rate     float64       // records/s offered; 0 is as fast as the gateway answers
	Duration time.Duration // how long the load is offered
	Settle   time.Duration // for the sender to finish retrying
	Deliver  time.Duration // for the backend to receive what was acknowledged
}

// RunOverload checks that the gateway is never OOM-killed, stays under the
// limit, refuses only with retryable statuses, and that once the load stops
// every acknowledged record arrives.
func RunOverload(t tb.T, r *Rig, o Overload, res *Result) {
	t.Helper()
	cg := e2e.NewMemoryCgroup(t, o.Limit)
	col := cg.Start(t, r.Args(), r.GW.Env)
	sampler := e2e.SampleProc(col.PID(), 100*time.Millisecond)
	defer sampler.Stop()

	s := r.Sender(o.Workers, o.Rate)
	ctx, cancel := context.WithTimeout(context.Background(), o.Duration)
	defer cancel()
	start := time.Now()
	s.Send(ctx, o.Chunks)
	<-ctx.Done()
	offered, stopped := time.Since(start), time.Now()
	st := Settle(t, cancel, s, o.Settle)
	res.settled(st)

	peak := sampler.PeakAnon()
	res.note(t, "overload for %s: peak anonymous RSS %.0f MiB (VmRSS with the mapped queue file %.0f MiB), cgroup peak %.0f MiB (limit %d MiB, page cache included), refusals %d x 503, %d x 429, OOM kills %d",
		offered.Round(time.Second), e2e.MiB(peak), e2e.MiB(sampler.PeakRSS()), e2e.MiB(cg.PeakUsage()), o.Limit>>20,
		st.Statuses[http.StatusServiceUnavailable], st.Statuses[http.StatusTooManyRequests], cg.OOMKills())
	if n := cg.OOMKills(); n > 0 || !col.Running() {
		t.Fatalf("collector was OOM-killed (%d) or exited under overload:\n%s", n, col.Output())
	}
	if peak >= o.Limit {
		t.Errorf("peak anonymous RSS %.0f MiB reached the %d MiB limit", e2e.MiB(peak), o.Limit>>20)
	}
	res.delivered(ExpectDelivered(t, r.Sink, s.Acked(), o.Deliver))
	res.note(t, "drained %s after the load stopped", time.Since(stopped).Round(time.Second))
}

// Outage is the backend-outage scenario at one scale: the backend refuses
// everything for Duration while Rate records/s arrive, 100 a request.
type Outage struct {
	Rate     float64
	Duration time.Duration
	Poll     time.Duration // how often the queue size is read during the outage
	Settle   time.Duration
	Deliver  time.Duration
}

// RunBackendOutage checks that the receiver keeps acknowledging because the
// persistent queue holds the data on disk, and that after the backend recovers
// everything arrives.
func RunBackendOutage(t tb.T, r *Rig, o Outage, res *Result) {
	t.Helper()
	col := r.Start(t)
	r.Sink.Refuse(true)
	chunks := e2e.EncodeChunks(0, int(o.Rate*o.Duration.Seconds())/100, 100)
	s := r.Sender(4, o.Rate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Send(ctx, chunks)

	var peakQueue float64
	var peakDisk int64
	end := time.Now().Add(o.Duration)
	for time.Now().Before(end) {
		peakQueue = max(peakQueue, e2e.LogQueueBytes(r.GW.MetricsAddr))
		peakDisk = max(peakDisk, e2e.DirBytes(r.GW.QueueDir))
		time.Sleep(o.Poll)
	}
	// Every chunk offered during the outage is acknowledged: the queue took it.
	res.settled(Settle(t, cancel, s, o.Settle))
	acked := s.Acked()
	if got := r.Sink.LogRecordCount(); got != 0 {
		t.Fatalf("the backend refused everything, yet %d records arrived", got)
	}
	peakQueue = max(peakQueue, e2e.LogQueueBytes(r.GW.MetricsAddr))
	res.note(t, "backend down %s under %.0f records/s: %d records acknowledged meanwhile; queue peak %.1f MiB (otelcol_exporter_queue_size, bytes sizer), %.1f MiB of files on disk",
		o.Duration, o.Rate, len(acked), peakQueue/(1<<20), e2e.MiB(peakDisk))

	recovered := time.Now()
	r.Sink.Refuse(false)
	rep := ExpectDelivered(t, r.Sink, acked, o.Deliver)
	res.delivered(rep)
	res.note(t, "drained %d records in %s after recovery (duplicates %d)", rep.Received, time.Since(recovered).Round(100*time.Millisecond), rep.Duplicated)
	if !col.Running() {
		t.Fatal("collector exited during the outage")
	}
}

// Restart is a stop-under-load-and-restart scenario (kill -9 or SIGTERM) at
// one scale.
type Restart struct {
	Chunks  []e2e.Chunk
	Workers int
	Rate    float64 // records/s; 0 is as fast as the gateway answers
	StopAt  int     // records acknowledged (and some delivered) when the gateway is stopped
	// MoreAfterRestart is how many more records than at the stop must be
	// acknowledged after the restart before the load stops; with Drain every
	// chunk is sent instead.
	MoreAfterRestart int
	Drain            bool
	Settle, Deliver  time.Duration
}

// RunKill9 kills the gateway with SIGKILL under load and restarts it on the same
// queue directory: every record the receiver acknowledged is delivered at
// least once.
func RunKill9(t tb.T, r *Rig, o Restart, res *Result) {
	t.Helper()
	// Kill once the pipeline is busy: records acknowledged, some delivered, some
	// still in the queue.
	col, s, cancel := underLoad(t, r, o.Chunks, o.Workers, o.Rate, o.StopAt)
	defer cancel()
	col.Kill()
	res.note(t, "kill -9 with %d records acknowledged and %d delivered; restarted on the same queue directory", s.AckedRecords(), r.Sink.LogRecordCount())

	// The sender retries (connection refused) until the gateway is back; the
	// load goes on for a while after the restart.
	rep := restart(t, r, s, cancel, o, res)
	res.note(t, "kill -9: %d duplicated deliveries (at-least-once)", rep.Duplicated)
}

// RunSIGTERM stops the gateway with SIGTERM under load: everything acknowledged
// is delivered or left in the persistent queue, and what was left is delivered
// after a restart. The backend is refusing when the signal arrives, so the
// queue is not empty at shutdown and the restart has something to prove.
func RunSIGTERM(t tb.T, r *Rig, o Restart, res *Result) {
	t.Helper()
	col, s, cancel := underLoad(t, r, o.Chunks, o.Workers, o.Rate, o.StopAt)
	defer cancel()
	r.Sink.Refuse(true)
	time.Sleep(time.Second) // let acknowledged data pile up in the queue
	signalled := time.Now()
	if err := col.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := col.Wait(2 * time.Minute)
	res.note(t, "SIGTERM with %d acknowledged, %d delivered: exit %d (%v) after %s, %.1f MiB of queue files left",
		s.AckedRecords(), r.Sink.LogRecordCount(), code, err, time.Since(signalled).Round(10*time.Millisecond), e2e.MiB(e2e.DirBytes(r.GW.QueueDir)))
	if err != nil || code != 0 {
		t.Fatalf("SIGTERM under load: exit %d, %v", code, err)
	}

	r.Sink.Refuse(false)
	rep := restart(t, r, s, cancel, o, res)
	res.note(t, "after restart: %d delivered in total, %d duplicated", rep.Received, rep.Duplicated)
}

// underLoad starts the gateway and a sender of chunks, and returns once at
// least acked records are acknowledged and some delivered.
func underLoad(t tb.T, r *Rig, chunks []e2e.Chunk, workers int, rate float64, acked int) (*e2e.Collector, *e2e.Sender, context.CancelFunc) {
	t.Helper()
	col := r.Start(t)
	s := r.Sender(workers, rate)
	ctx, cancel := context.WithCancel(context.Background())
	s.Send(ctx, chunks)
	if !otlpfixture.WaitFor(2*time.Minute, func() bool { return s.AckedRecords() >= acked && r.Sink.LogRecordCount() > 0 }) {
		cancel()
		t.Fatalf("load did not get going: acked %d, delivered %d", s.AckedRecords(), r.Sink.LogRecordCount())
	}
	return col, s, cancel
}

// restart starts the gateway again on the same queue directory, lets the load
// go on (o.MoreAfterRestart or o.Drain), checks that every acknowledged record
// arrives, and stops the gateway cleanly.
func restart(t tb.T, r *Rig, s *e2e.Sender, cancel context.CancelFunc, o Restart, res *Result) otlpfixture.LossReport {
	t.Helper()
	ackedAtStop := s.AckedRecords()
	col := r.Start(t)
	stop := cancel
	if o.Drain {
		stop = func() {}
	} else if !otlpfixture.WaitFor(2*time.Minute, func() bool { return s.AckedRecords() >= ackedAtStop+o.MoreAfterRestart }) {
		t.Errorf("after the restart only %d records acknowledged (%d at the stop)", s.AckedRecords(), ackedAtStop)
	}
	res.settled(Settle(t, stop, s, o.Settle))
	rep := ExpectDelivered(t, r.Sink, s.Acked(), o.Deliver)
	res.delivered(rep)
	if code, err := col.Stop(time.Minute); err != nil || code != 0 {
		t.Errorf("restarted collector: exit %d, %v\n%s", code, err, col.Output())
	}
	return rep
}
