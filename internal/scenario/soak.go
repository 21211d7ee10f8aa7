// SPDX-License-Identifier: Apache-2.0

package scenario

import (
	"context"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// ChurnSoak is the churn soak at one scale: a steady load for the whole soak
// while the backend goes down and up in cycles, so the persistent queue fills
// and drains again and again, and queue_storage writes segments, empties them
// and reclaims them over and over.
type ChurnSoak struct {
	Rate   float64 // records/s offered throughout, 100 a request, 4 connections
	Cycles int
	Down   time.Duration // the backend refuses everything this long each cycle
	// Up is the least time the backend accepts after each outage. The up
	// phase also lasts until every record acknowledged before the recovery has
	// arrived (the exporter's retry back-off, up to 30 s, decides when the
	// drain starts), at most DrainTimeout.
	Up, DrainTimeout time.Duration
	Sample           time.Duration // how often queue size, disk use and RSS are read
	// MaxGrowth fails the soak when the last cycle's peak disk use is more than
	// this many times the first's (plus two segments), beyond what a larger
	// backlog explains.
	MaxGrowth       float64
	Settle, Deliver time.Duration
}

// Records is how many records the soak pre-encodes (and the sink must count):
// enough for every cycle, with room for up phases that wait for a drain.
func (o ChurnSoak) Records() int {
	n := int(o.Rate * float64(o.Cycles) * (o.Down + 3*o.Up/2).Seconds())
	return n - n%100
}

// Soak is what the churn soak measured: the series for the plot and, per
// cycle, the figures its checks use.
type Soak struct {
	// Client is the default exporter's logs queue directory under the queue
	// directory, the one that churns; SegmentBytes is queue_storage's segment
	// size, read from the smallest segment file on disk.
	Client       string
	SegmentBytes int64
	Samples      []SoakSample
	Cycles       []SoakCycle
	// Rest is read once the load has stopped and every queue is empty.
	Rest SoakSample
	// MaxRatio is the highest disk use of the logs queue against its bound in
	// any sample (informative: the checks are at drained cycle ends and at rest).
	MaxRatio float64
}

// SoakSample is one reading. Disk use is allocated bytes (st_blocks × 512):
// segments are fallocated, so a segment takes its whole size from the first
// byte written.
type SoakSample struct {
	At    time.Duration // since the load started
	Cycle int           // 1-based; 0 after the last cycle
	Down  bool          // the backend was refusing
	// QueueBytes is the default exporter's otelcol_exporter_queue_size for
	// logs (bytes sizer: uncompressed OTLP), -1 when it could not be read.
	QueueBytes  float64
	DiskBytes   int64 // every file under the queue directory
	ClientBytes int64 // the logs queue's directory
	Segments    int   // segment files of the logs queue
	LastSegment uint64
	RSS         int64 // the gateway's VmRSS
}

// SoakCycle is one outage and the drain after it.
type SoakCycle struct {
	N                    int
	Start, Recovered     time.Duration // since the load started
	DrainedAfter         time.Duration // from the recovery until the backlog had arrived
	Backlog              int           // records acknowledged while the backend was down
	PeakQueue            float64
	PeakDisk, PeakClient int64
	PeakRSS              int64
	SegmentsCreated      int
	// End is read at the end of the up phase, the backlog drained; EndBound is
	// the logs queue's bound then.
	End      SoakSample
	EndBound int64
}

// Bound is what queue_storage promises (its README): a client's segments take at
// most twice its live data plus two segments, plus one while rolling.
func (k *Soak) Bound(queueBytes float64) int64 {
	return 2*int64(max(queueBytes, 0)) + 3*k.SegmentBytes
}

// RunChurnSoak checks that the persistent queue's disk use stays bounded under
// churn (queue_storage reclaims its segments): at the end of every drained
// cycle and at rest each queue's directory is within its bound, the per-cycle
// peak does not grow beyond what the backlog explains, segments are created and
// reclaimed throughout, and every acknowledged record arrives.
func RunChurnSoak(t tb.T, r *Rig, o ChurnSoak, res *Result) {
	t.Helper()
	k := &Soak{}
	res.Soak = k
	chunks := e2e.EncodeChunks(0, o.Records()/100, 100)
	col := r.Start(t)
	dir, metrics := r.GW.QueueDir, r.GW.MetricsAddr

	var first queueUse
	if !otlpfixture.WaitFor(30*time.Second, func() bool {
		first = readQueueUse(dir, metrics)
		k.Client = first.defaultLogs
		return k.Client != "" && first.clients[k.Client].segments > 0
	}) {
		t.Fatalf("no queue_storage segment for the default exporter's logs queue under %s (queue sizes %v): is the gateway on queue_storage?", dir, first.queues)
	}
	for _, c := range first.clients {
		if c.minSegment > 0 && (k.SegmentBytes == 0 || c.minSegment < k.SegmentBytes) {
			k.SegmentBytes = c.minSegment
		}
	}

	var mu sync.Mutex
	var cycle atomic.Int64
	var down atomic.Bool
	start := time.Now()
	take := func() (SoakSample, queueUse) {
		u := readQueueUse(dir, metrics)
		c := u.clients[k.Client]
		st, _ := e2e.ReadProc(col.PID())
		s := SoakSample{
			At: time.Since(start), Cycle: int(cycle.Load()), Down: down.Load(),
			QueueBytes: u.queues[k.Client], DiskBytes: u.total, ClientBytes: c.bytes,
			Segments: c.segments, LastSegment: c.lastSegment, RSS: st.RSS,
		}
		if _, ok := u.queues[k.Client]; !ok {
			s.QueueBytes = -1
		}
		mu.Lock()
		k.Samples = append(k.Samples, s)
		mu.Unlock()
		return s, u
	}
	// checkBound fails when a queue's directory exceeds its bound.
	checkBound := func(when string, u queueUse) {
		t.Helper()
		for name, c := range u.clients {
			if b := k.Bound(u.queues[name]); c.bytes > b {
				t.Errorf("%s: %s takes %.1f MiB on disk (%d segments) for %.1f MiB queued: over its bound of %.1f MiB (2 x queued + 3 segments of %.1f MiB)",
					when, name, e2e.MiB(c.bytes), c.segments, u.queues[name]/(1<<20), e2e.MiB(b), e2e.MiB(k.SegmentBytes))
			}
		}
	}

	cycle.Store(1)
	stopSampling, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(o.Sample)
		defer tick.Stop()
		for {
			take()
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() {
		select {
		case <-stopSampling:
		default:
			close(stopSampling)
		}
		<-sampled
	}()

	s := r.Sender(4, o.Rate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Send(ctx, chunks)
	for c := 1; c <= o.Cycles; c++ {
		cy := SoakCycle{N: c, Start: time.Since(start)}
		cycle.Store(int64(c))
		down.Store(true)
		ackedAtDown := s.AckedRecords()
		r.Sink.Refuse(true)
		time.Sleep(o.Down)
		r.Sink.Refuse(false)
		down.Store(false)
		recovered := time.Now()
		cy.Recovered = recovered.Sub(start)

		cy.Backlog = s.AckedRecords() - ackedAtDown
		backlog := s.Acked() // all acknowledged so far: the outage's and the earlier ones
		drained := otlpfixture.WaitEvery(o.DrainTimeout, 500*time.Millisecond, func() bool { return r.Sink.Loss(backlog).Missing == 0 })
		cy.DrainedAfter = time.Since(recovered)
		if !drained {
			t.Errorf("cycle %d: %d of the %d records acknowledged before the recovery still missing %s after it", c, r.Sink.Loss(backlog).Missing, len(backlog), o.DrainTimeout)
		}
		// The up phase lasts Up, and two samples past the drain.
		time.Sleep(max(time.Until(recovered.Add(o.Up)), 2*o.Sample))
		end, u := take()
		cy.End, cy.EndBound = end, k.Bound(end.QueueBytes)
		checkBound("end of cycle "+strconv.Itoa(c), u)
		k.Cycles = append(k.Cycles, cy)
		t.Logf("soak cycle %d: backend down %s; %d records acknowledged meanwhile, all arrived %s after the recovery; at the end %.1f MiB queued, %.1f MiB on disk for logs (bound %.1f MiB), %.1f MiB in the queue directory",
			c, o.Down, cy.Backlog, cy.DrainedAfter.Round(100*time.Millisecond), end.QueueBytes/(1<<20), e2e.MiB(end.ClientBytes), e2e.MiB(cy.EndBound), e2e.MiB(end.DiskBytes))
		if !drained {
			break
		}
	}
	cycle.Store(0)
	if s.AckedRecords() >= Records(chunks) {
		res.note(t, "the pre-encoded load (%d records) ran out before the last cycle ended", Records(chunks))
	}

	res.settled(Settle(t, cancel, s, o.Settle))
	res.delivered(ExpectDelivered(t, r.Sink, s.Acked(), o.Deliver))
	// At rest: every queue empty, each directory down to its newest segment.
	if !otlpfixture.WaitEvery(time.Minute, 500*time.Millisecond, func() bool {
		u := readQueueUse(dir, metrics)
		for _, q := range u.queues {
			if q != 0 {
				return false
			}
		}
		return len(u.queues) > 0
	}) {
		t.Errorf("queues not empty a minute after every record arrived: %v", readQueueUse(dir, metrics).queues)
	}
	rest, u := take()
	k.Rest = rest
	checkBound("at rest", u)
	close(stopSampling)
	<-sampled

	k.summarize(first.clients[k.Client].lastSegment)
	soakNotes(t, k, o, res)
	if !col.Running() {
		t.Fatalf("collector exited during the soak:\n%s", e2e.Tail(col.Output(), 40))
	}
}

// summarize fills each cycle's peaks from the samples taken during it;
// prevLast is the logs queue's newest segment before the load.
func (k *Soak) summarize(prevLast uint64) {
	for i := range k.Cycles {
		cy := &k.Cycles[i]
		last := prevLast
		for _, s := range k.Samples {
			if s.Cycle != cy.N {
				continue
			}
			cy.PeakQueue = max(cy.PeakQueue, s.QueueBytes)
			cy.PeakDisk = max(cy.PeakDisk, s.DiskBytes)
			cy.PeakClient = max(cy.PeakClient, s.ClientBytes)
			cy.PeakRSS = max(cy.PeakRSS, s.RSS)
			last = max(last, s.LastSegment)
		}
		cy.SegmentsCreated = int(last - prevLast)
		prevLast = last
	}
	for _, s := range k.Samples {
		if s.QueueBytes >= 0 {
			k.MaxRatio = max(k.MaxRatio, float64(s.ClientBytes)/float64(k.Bound(s.QueueBytes)))
		}
	}
}

// soakNotes checks what the cycles add up to and writes the figures.
func soakNotes(t tb.T, k *Soak, o ChurnSoak, res *Result) {
	t.Helper()
	if len(k.Cycles) == 0 {
		return
	}
	first, last := k.Cycles[0], k.Cycles[len(k.Cycles)-1]
	var peaks []string
	for _, c := range k.Cycles {
		peaks = append(peaks, strconv.FormatFloat(e2e.MiB(c.PeakClient), 'f', 1, 64))
	}
	res.note(t, "churn soak: %d cycles of %s down / at least %s up under %.0f records/s; segments of %.0f MiB; logs queue peak disk per cycle %s MiB (queue directory peak %.1f MiB, gateway RSS peak %.0f MiB)",
		len(k.Cycles), o.Down, o.Up, o.Rate, e2e.MiB(k.SegmentBytes), strings.Join(peaks, ", "), e2e.MiB(maxOf(k.Cycles, func(c SoakCycle) int64 { return c.PeakDisk })), e2e.MiB(maxOf(k.Cycles, func(c SoakCycle) int64 { return c.PeakRSS })))
	res.note(t, "at rest after the last drain: logs queue %.1f MiB on disk in %d segment(s) (bound %.1f MiB), queue directory %.1f MiB; %d segments created and %d reclaimed in the logs queue; highest disk/bound of any sample %.2f",
		e2e.MiB(k.Rest.ClientBytes), k.Rest.Segments, e2e.MiB(k.Bound(0)), e2e.MiB(k.Rest.DiskBytes), k.Rest.LastSegment, int(k.Rest.LastSegment)-k.Rest.Segments, k.MaxRatio)

	// A bigger backlog (the exporter's randomized retry back-off decides how
	// long after the recovery the drain starts) explains a bigger peak, and a
	// sample may catch a segment more or less (the one being rolled, one a
	// straggler still holds): growth beyond that is disk not given back.
	if len(k.Cycles) > 1 && first.PeakQueue > 0 {
		allowed := o.MaxGrowth*max(1, last.PeakQueue/first.PeakQueue)*float64(first.PeakClient) + float64(2*k.SegmentBytes)
		if float64(last.PeakClient) > allowed {
			t.Errorf("logs queue peak disk grew from %.1f MiB (cycle 1, %.1f MiB queued) to %.1f MiB (cycle %d, %.1f MiB queued): over %.1f MiB, %.1fx beyond the backlog's growth plus two segments",
				e2e.MiB(first.PeakClient), first.PeakQueue/(1<<20), e2e.MiB(last.PeakClient), last.N, last.PeakQueue/(1<<20), allowed/(1<<20), o.MaxGrowth)
		}
	}
	// Every cycle must write and reclaim segments; a soak whose backlog fits one
	// segment proves nothing about reclaiming.
	created := int(k.Rest.LastSegment)
	switch reclaimed := created - k.Rest.Segments; {
	case created <= 2*len(k.Cycles):
		t.Errorf("only %d segments created over %d cycles: the backlog did not churn segments (raise the rate or the outage)", created, len(k.Cycles))
	case reclaimed < 2*len(k.Cycles):
		t.Errorf("%d segments created over %d cycles, only %d reclaimed", created, len(k.Cycles), reclaimed)
	}
}

func maxOf(cs []SoakCycle, f func(SoakCycle) int64) int64 {
	var m int64
	for _, c := range cs {
		m = max(m, f(c))
	}
	return m
}

// queueUse is one reading of a queue directory and of the exporters' queue
// sizes, by queue_storage client directory (exporter_<type>_<name>_<signal>,
// as the extension names them).
type queueUse struct {
	total       int64
	clients     map[string]clientUse
	queues      map[string]float64 // otelcol_exporter_queue_size (bytes)
	defaultLogs string             // the default exporter's logs client
}

type clientUse struct {
	bytes       int64 // allocated
	segments    int
	minSegment  int64 // the smallest segment file's length
	lastSegment uint64
}

func readQueueUse(dir, metricsAddr string) queueUse {
	u := queueUse{clients: map[string]clientUse{}, queues: map[string]float64{}}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed meanwhile: a reclaimed segment
		}
		alloc := fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			alloc = st.Blocks * 512
		}
		u.total += alloc
		name := filepath.Base(filepath.Dir(path))
		c := u.clients[name]
		c.bytes += alloc
		if id, ok := strings.CutSuffix(d.Name(), ".seg"); ok {
			c.segments++
			if c.minSegment == 0 || fi.Size() < c.minSegment {
				c.minSegment = fi.Size()
			}
			if n, err := strconv.ParseUint(id, 16, 64); err == nil {
				c.lastSegment = max(c.lastSegment, n)
			}
		}
		u.clients[name] = c
		return nil
	})
	m, err := e2e.ScrapeSelfMetrics(metricsAddr)
	if err != nil {
		return u
	}
	f := m.Family("otelcol_exporter_queue_size")
	if f == nil {
		return u
	}
	for _, s := range f.GetMetric() {
		var exporter, signal string
		for _, l := range s.GetLabel() {
			switch l.GetName() {
			case "exporter":
				exporter = l.GetValue()
			case "data_type":
				signal = l.GetValue()
			}
		}
		name := "exporter_" + strings.ReplaceAll(exporter, "/", "_") + "_" + signal
		u.queues[name] += s.GetGauge().GetValue()
		if signal == "logs" && strings.HasSuffix(exporter, "/default") {
			u.defaultLogs = name
		}
	}
	return u
}
