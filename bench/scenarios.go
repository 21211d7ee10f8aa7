package main

import (
	"context"
	"fmt"
	"log"
	"syscall"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// scenario is one reliability scenario's outcome at full scale.
type scenario struct {
	Name, Variant              string
	Acked, Missing, Duplicated int
	Refusals                   map[int]int
	Notes                      []string
	Err                        string
}

func (s *scenario) note(format string, args ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, args...))
	log.Printf("%s/%s: %s", s.Name, s.Variant, fmt.Sprintf(format, args...))
}

func runScenarios(satRate float64, satChunks []e2e.Chunk) []*scenario {
	var out []*scenario
	run := func(sc *scenario, f func(t *runTB, sc *scenario)) {
		log.Printf("scenario %s (%s)", sc.Name, sc.Variant)
		if err := measure(sc.Name, func(t *runTB) { f(t, sc) }); err != nil {
			sc.Err = err.Error()
		}
		out = append(out, sc)
	}
	run(&scenario{Name: "overload 3x in a 512 MiB cgroup", Variant: "gateway"}, func(t *runTB, sc *scenario) { overload(t, sc, satRate) })
	run(&scenario{Name: "backend outage", Variant: "gateway"}, outage)
	for _, v := range []string{"gateway", "upstream"} {
		run(&scenario{Name: "kill -9 under load", Variant: v}, func(t *runTB, sc *scenario) { kill9(t, sc, satChunks) })
	}
	run(&scenario{Name: "SIGTERM under load, restart", Variant: "gateway"}, func(t *runTB, sc *scenario) { sigterm(t, sc, satChunks) })
	return out
}

func settleSender(t *runTB, sc *scenario, snd *e2e.Sender, cancel context.CancelFunc, timeout time.Duration) {
	cancel()
	if !snd.Wait(timeout) {
		sc.note("sender still retrying after %s", timeout)
	}
	st := snd.Stats()
	sc.Acked, sc.Refusals = st.AckedRecords, st.Statuses
	if st.DroppedRecords > 0 {
		sc.note("%d records dropped by the sender (non-retryable status)", st.DroppedRecords)
	}
}

func waitLoss(s *sink, acked []int64, timeout time.Duration) (missing, dup int) {
	deadline := time.Now().Add(timeout)
	last, lastChange := int64(-1), time.Now()
	for {
		missing, dup = s.loss(acked)
		if r := s.received.Load(); r != last {
			last, lastChange = r, time.Now()
		}
		if missing == 0 || time.Now().After(deadline) || time.Since(lastChange) > 45*time.Second {
			return missing, dup
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func overload(t *runTB, sc *scenario, satRate float64) {
	const limit = 512 << 20
	cg := e2e.NewMemoryCgroup(t, limit)
	rate := 3 * satRate
	n := min(int(rate*overloadDur.Seconds()), *overloadMax)
	n -= n % 1000
	log.Printf("overload: pre-encoding %d records to offer at %.0f records/s", n, rate)
	chunks := e2e.EncodeChunks(0, n/1000, 1000)
	s, gw, rcv, _ := startVariant(t, "gateway", int64(n))
	col := cg.Start(t, gw.Args, gw.Env)
	sampler := e2e.SampleProc(col.PID(), 100*time.Millisecond)
	snd := newSender(gw, rcv, 32, rate)
	ctx, cancel := context.WithTimeout(context.Background(), *overloadDur)
	defer cancel()
	start := time.Now()
	snd.Send(ctx, chunks)
	<-ctx.Done()
	offered := time.Since(start)
	stopLoad := time.Now()
	settleSender(t, sc, snd, cancel, 10*time.Minute)
	sc.Missing, sc.Duplicated = waitLoss(s, snd.Acked(), 10*time.Minute)
	sampler.Stop()
	sc.note("offered %d records at %.0f records/s (3x the measured %.0f) for %s; drained %s after the load stopped",
		n, rate, satRate, offered.Round(time.Second), time.Since(stopLoad).Round(time.Second))
	sc.note("peak anonymous RSS %.0f MiB, peak VmRSS %.0f MiB (incl. the mapped queue file), cgroup peak %.0f MiB of %d MiB; OOM kills %d; still running %v",
		e2e.MiB(sampler.PeakAnon()), e2e.MiB(sampler.PeakRSS()), e2e.MiB(cg.PeakUsage()), limit>>20, cg.OOMKills(), col.Running())
}

func outage(t *runTB, sc *scenario) {
	n := int(*outageRate * outageDur.Seconds())
	chunks := e2e.EncodeChunks(0, n/100, 100)
	s, gw, rcv, start := startVariant(t, "gateway", int64(n))
	col := start()
	s.refuse.Store(true)
	snd := newSender(gw, rcv, 4, *outageRate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	snd.Send(ctx, chunks)
	var peakQueue float64
	var peakDisk int64
	end := time.Now().Add(*outageDur)
	for time.Now().Before(end) {
		peakQueue = max(peakQueue, e2e.LogQueueBytes(gw.MetricsAddr))
		peakDisk = max(peakDisk, e2e.DirBytes(gw.QueueDir))
		time.Sleep(500 * time.Millisecond)
	}
	settleSender(t, sc, snd, cancel, 5*time.Minute)
	peakQueue = max(peakQueue, e2e.LogQueueBytes(gw.MetricsAddr))
	recovered := time.Now()
	s.refuse.Store(false)
	sc.Missing, sc.Duplicated = waitLoss(s, snd.Acked(), 10*time.Minute)
	sc.note("backend down %s under %.0f records/s: %d records acknowledged meanwhile; queue peak %.0f MiB (otelcol_exporter_queue_size, bytes sizer), %.0f MiB of files on disk; drained in %s",
		*outageDur, *outageRate, sc.Acked, peakQueue/(1<<20), e2e.MiB(peakDisk), time.Since(recovered).Round(100*time.Millisecond))
	if !col.Running() {
		sc.note("collector exited")
	}
}

func kill9(t *runTB, sc *scenario, chunks []e2e.Chunk) {
	total := sumRecords(chunks)
	s, gw, rcv, start := startVariant(t, sc.Variant, int64(chunks[0].First)+int64(total))
	col := start()
	snd := newSender(gw, rcv, 8, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	snd.Send(ctx, chunks)
	for snd.AckedRecords() < total/3 {
		time.Sleep(20 * time.Millisecond)
	}
	col.Kill()
	atKill, deliveredAtKill := snd.AckedRecords(), s.received.Load()
	col2 := start()
	settleSender(t, sc, snd, func() {}, 10*time.Minute)
	sc.Missing, sc.Duplicated = waitLoss(s, snd.Acked(), 5*time.Minute)
	sc.note("kill -9 with %d records acknowledged and %d delivered; restarted on the same queue directory", atKill, deliveredAtKill)
	_, _ = col2.Stop(time.Minute)
}

func sigterm(t *runTB, sc *scenario, chunks []e2e.Chunk) {
	total := sumRecords(chunks)
	s, gw, rcv, start := startVariant(t, "gateway", int64(chunks[0].First)+int64(total))
	col := start()
	snd := newSender(gw, rcv, 8, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	snd.Send(ctx, chunks)
	for snd.AckedRecords() < total/3 {
		time.Sleep(20 * time.Millisecond)
	}
	s.refuse.Store(true) // the queue is not empty at shutdown
	time.Sleep(time.Second)
	t0 := time.Now()
	_ = col.Signal(syscall.SIGTERM)
	code, err := col.Wait(2 * time.Minute)
	sc.note("SIGTERM with %d acknowledged, %d delivered: exit %d (%v) after %s, %.0f MiB of queue files left",
		snd.AckedRecords(), s.received.Load(), code, err, time.Since(t0).Round(10*time.Millisecond), e2e.MiB(e2e.DirBytes(gw.QueueDir)))
	s.refuse.Store(false)
	col2 := start()
	settleSender(t, sc, snd, func() {}, 10*time.Minute)
	sc.Missing, sc.Duplicated = waitLoss(s, snd.Acked(), 5*time.Minute)
	_, _ = col2.Stop(time.Minute)
}
