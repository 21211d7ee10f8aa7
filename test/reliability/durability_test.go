package reliability_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// Scenario 2: the backend is down under steady load. The receiver keeps
// acknowledging because the persistent queue holds the data on disk; after the
// backend recovers everything arrives.
func TestBackendOutage(t *testing.T) {
	r := newRig(t, "")
	col := r.start(t)
	const rate, outage = 2000.0, 10 * time.Second
	r.sink.Refuse(true)
	chunks := e2e.EncodeChunks(0, int(rate*outage.Seconds())/100, 100)
	s := r.sender(4, rate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Send(ctx, chunks)

	var peakQueue float64
	var peakDisk int64
	end := time.Now().Add(outage)
	for time.Now().Before(end) {
		peakQueue = max(peakQueue, e2e.LogQueueBytes(r.gw.MetricsAddr))
		peakDisk = max(peakDisk, e2e.DirBytes(r.gw.QueueDir))
		time.Sleep(250 * time.Millisecond)
	}
	// Every chunk offered during the outage is acknowledged: the queue took it.
	settle(t, cancel, s, 2*time.Minute)
	acked := s.Acked()
	if got := r.sink.LogRecordCount(); got != 0 {
		t.Fatalf("the backend refused everything, yet %d records arrived", got)
	}
	peakQueue = max(peakQueue, e2e.LogQueueBytes(r.gw.MetricsAddr))
	t.Logf("outage %s: %d records acknowledged while the backend was down; queue peak %.1f MiB (metric), %.1f MiB on disk",
		outage, len(acked), peakQueue/(1<<20), e2e.MiB(peakDisk))

	recovered := time.Now()
	r.sink.Refuse(false)
	rep := expectDelivered(t, r.sink, acked, 3*time.Minute)
	t.Logf("drained %d records in %s after recovery (duplicates %d)", rep.Received, time.Since(recovered).Round(100*time.Millisecond), rep.Duplicated)
	if !col.Running() {
		t.Fatal("collector exited during the outage")
	}
}

// Scenario 3: kill -9 under load, restart on the same queue directory. Every
// record the receiver acknowledged is delivered at least once.
func TestKill9UnderLoad(t *testing.T) {
	r := newRig(t, "")
	col := r.start(t)
	chunks := e2e.EncodeChunks(0, 600, 100) // 60,000 records
	s := r.sender(4, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Send(ctx, chunks)

	// Kill once the pipeline is busy: records acknowledged, some delivered, some
	// still in the queue.
	if !e2e.WaitFor(2*time.Minute, func() bool { return s.AckedRecords() >= 15000 && r.sink.LogRecordCount() > 0 }) {
		t.Fatalf("load did not get going: acked %d, delivered %d", s.AckedRecords(), r.sink.LogRecordCount())
	}
	col.Kill()
	ackedAtKill, deliveredAtKill := s.AckedRecords(), r.sink.LogRecordCount()
	t.Logf("kill -9 with %d records acknowledged and %d delivered", ackedAtKill, deliveredAtKill)

	// The sender retries (connection refused) until the collector is back; the
	// load goes on for a while after the restart.
	col2 := r.start(t)
	if !e2e.WaitFor(2*time.Minute, func() bool { return s.AckedRecords() >= ackedAtKill+10000 }) {
		t.Errorf("after the restart only %d records acknowledged (%d at the kill)", s.AckedRecords(), ackedAtKill)
	}
	settle(t, cancel, s, 3*time.Minute)
	rep := expectDelivered(t, r.sink, s.Acked(), 3*time.Minute)
	t.Logf("kill -9: %d duplicated deliveries (at-least-once)", rep.Duplicated)
	if code, err := col2.Stop(time.Minute); err != nil || code != 0 {
		t.Errorf("restarted collector: exit %d, %v\n%s", code, err, col2.Output())
	}
}

// Scenario 5: SIGTERM under load. Everything acknowledged is delivered or left in
// the persistent queue, and what was left is delivered after a restart. The
// backend is refusing when the signal arrives, so the queue is not empty at
// shutdown and the restart has something to prove.
func TestSIGTERMUnderLoadThenRestart(t *testing.T) {
	r := newRig(t, "")
	col := r.start(t)
	chunks := e2e.EncodeChunks(0, 800, 100)
	s := r.sender(4, 8000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Send(ctx, chunks)
	if !e2e.WaitFor(2*time.Minute, func() bool { return s.AckedRecords() >= 10000 && r.sink.LogRecordCount() > 0 }) {
		t.Fatalf("load did not get going: acked %d, delivered %d", s.AckedRecords(), r.sink.LogRecordCount())
	}
	r.sink.Refuse(true)
	time.Sleep(time.Second) // let acknowledged data pile up in the queue
	if err := col.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := col.Wait(2 * time.Minute)
	if err != nil || code != 0 {
		t.Fatalf("SIGTERM under load: exit %d, %v", code, err)
	}
	delivered := r.sink.LogRecordCount()
	t.Logf("stopped with %d acknowledged, %d delivered, queue on disk %.1f MiB", s.AckedRecords(), delivered, e2e.MiB(e2e.DirBytes(r.gw.QueueDir)))

	r.sink.Refuse(false)
	col2 := r.start(t)
	if !e2e.WaitFor(2*time.Minute, func() bool { return s.AckedRecords() >= 50000 }) {
		t.Errorf("after the restart only %d records acknowledged", s.AckedRecords())
	}
	settle(t, cancel, s, 3*time.Minute)
	rep := expectDelivered(t, r.sink, s.Acked(), 3*time.Minute)
	t.Logf("after restart: %d delivered in total, %d duplicated", rep.Received, rep.Duplicated)
	if code, err := col2.Stop(time.Minute); err != nil || code != 0 {
		t.Errorf("restarted collector: exit %d, %v", code, err)
	}
}
