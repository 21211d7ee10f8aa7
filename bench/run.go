// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/scenario"
)

// runResult is one run of one variant.
type runResult struct {
	Variant string
	// Steady rate phase.
	SteadyCPUPct, SteadyCPUsPerM, SteadyRSSMean, SteadyRSSPeak float64
	LatP50, LatP99                                             time.Duration
	SteadyRecords, SteadyMissing                               int
	// Saturation phase.
	SatRate, SatPerCore, SatCPUsPerM, SatRSSPeak float64
	SatMissing                                   int
	// SatRetries counts the requests sent again at saturation (503 from
	// admission or a full queue, transport errors): each one was received,
	// perhaps decoded, and refused, which costs CPU without a record delivered.
	SatRetries int
	// SatRecordBytes is the mean OTLP protobuf size of a record of its
	// saturation load (its shape's: -bodyN).
	SatRecordBytes float64
	// Timeline for the plot (the last run).
	Series                 []point
	Profile, ProfileSteady string
}

type point struct {
	T    float64 // seconds since start
	Rate float64 // records/s delivered
	RSS  float64 // MiB
}

// startVariant prepares the gateway rig (internal/scenario) for variant against
// a sink that counts sequence numbers below maxSeq, and a sink of its own for
// each backend the variant adds (variantBackends), in the same order.
func startVariant(t *runTB, variant string, maxSeq int64) (*scenario.Rig, []*otlpfixture.Sink) {
	args, err := variantConfig(variant)
	if err != nil {
		t.Fatal(err)
	}
	args = append(args, variantFlags(variant)...)
	env := variantEnv(variant)
	var sinks []*otlpfixture.Sink
	for _, b := range backendsOf(variant) {
		tls := e2e.NewBackendTLS(t, b.name)
		sink := e2e.NewSink(t, otlpfixture.SinkOptions{TLS: tls.Server, MaxSeq: maxSeq})
		sinks = append(sinks, sink)
		env = append(backendEnv(b.name, "https://"+sink.HTTPAddr, tls), env...)
	}
	return scenario.NewRig(t, scenario.RigOptions{Args: args, MaxSeq: maxSeq, Env: env, Binary: variantBinary(variant)}), sinks
}

// delivery is one backend of a run and the records it must receive.
type delivery struct {
	name string
	sink *otlpfixture.Sink
	// want says whether the backend must receive a record of this namespace.
	want func(ns string) bool
}

// deliveries are the default backend (every record) and the variant's own,
// each with its sink.
func deliveries(variant string, def *otlpfixture.Sink, sinks []*otlpfixture.Sink) []delivery {
	ds := []delivery{{name: "default", sink: def, want: func(string) bool { return true }}}
	for i, b := range backendsOf(variant) {
		ds = append(ds, delivery{name: b.name, sink: sinks[i], want: b.wants})
	}
	return ds
}

// expected is how many records of chunks d must receive.
func (d delivery) expected(chunks []e2e.Chunk, namespaces []string) int64 {
	var n int64
	for _, c := range chunks {
		if d.want(chunkNamespace(c, namespaces)) {
			n += int64(c.N)
		}
	}
	return n
}

// lost counts, of the acknowledged records, those d must have and has not
// (missing) and those it got and must not have (misrouted).
func (d delivery) lost(acked []int64, ns *namespaceIndex) (missing, misrouted int) {
	var want, other []int64
	for _, seq := range acked {
		if d.want(ns.of(seq)) {
			want = append(want, seq)
		} else {
			other = append(other, seq)
		}
	}
	missing = d.sink.Loss(want).Missing
	if len(other) > 0 {
		o := d.sink.Loss(other)
		misrouted = o.Acked - o.Missing
	}
	return missing, misrouted
}

func runVariant(t *runTB, variant string, load *phases, namespaces []string, profile bool) *runResult {
	steadyChunks, satChunks := load.steady, load.sat
	steadyN, satN := scenario.Records(steadyChunks), scenario.Records(satChunks)
	r, sinks := startVariant(t, variant, int64(steadyN+satN))
	s, gw := r.Sink, r.GW
	// Every backend must receive the records its route selects, each once:
	// a phase ends when each has all of its own, and a record missing at any
	// backend, or at one whose route does not select it, is counted.
	ds := deliveries(variant, s, sinks)
	nsIndex := newNamespaceIndex(namespaces, steadyChunks, satChunks)
	steadyWant, satWant := make([]int64, len(ds)), make([]int64, len(ds))
	for i, d := range ds {
		steadyWant[i] = d.expected(steadyChunks, namespaces)
		satWant[i] = steadyWant[i] + d.expected(satChunks, namespaces)
	}
	// lost counts the acknowledged records missing at any backend, and those
	// a backend got that its route does not select, reported as errors.
	lost := func(phase string, acked []int64) int {
		total := 0
		for _, d := range ds {
			missing, misrouted := d.lost(acked, nsIndex)
			total += missing + misrouted
			if misrouted > 0 {
				t.Errorf("%s: backend %s received %d records its route does not select", phase, d.name, misrouted)
			}
		}
		return total
	}
	var col *e2e.Collector
	if limit := variantMemLimit(variant); limit > 0 {
		if runsAlt(variant) {
			t.Fatalf("%s: a memory cgroup runs the shared binary only", variant)
		}
		col = e2e.NewMemoryCgroup(t, limit).Start(t, r.Args(), r.GW.Env)
	} else {
		col = r.Start(t)
	}
	res := &runResult{}
	t0 := time.Now()

	// Timeline sampling: CPU, RSS and delivered records every 250 ms.
	type sample struct {
		at        time.Time
		st        e2e.ProcStat
		delivered int64
	}
	var samples []sample
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			st, err := e2e.ReadProc(col.PID())
			if err == nil {
				samples = append(samples, sample{time.Now(), st, int64(s.LogRecordCount())})
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()
	cpuNow := func() time.Duration { st, _ := e2e.ReadProc(col.PID()); return st.CPU }
	// A collector that exits mid-run (OOM-killed in a -512mi cgroup, say)
	// ends the run at once, as an error rather than a figure, instead of
	// leaving the sender retrying a closed port for minutes.
	sendCtx, stopSending := context.WithCancel(t.ctx())
	defer stopSending()
	go func() {
		select {
		case <-col.Done():
			stopSending()
		case <-sendCtx.Done():
		}
	}()
	checkAlive := func(phase string) {
		select {
		case <-col.Done():
			code, _ := col.Wait(time.Second)
			t.Fatalf("the collector exited during the %s phase (exit code %d; -1 is a signal, such as the OOM killer's): %s", phase, code, e2e.Tail(col.Output(), 800))
		default:
		}
	}
	waitSender := func(snd *e2e.Sender, timeout time.Duration) {
		done := make(chan struct{})
		go func() { snd.Wait(timeout); close(done) }()
		select {
		case <-done:
		case <-col.Done():
			snd.GiveUp()
			<-done
		}
	}
	// waitDelivered waits until each backend has want[i] records.
	waitDelivered := func(want []int64, timeout time.Duration) bool {
		deadline := time.Now().Add(timeout)
		for i, d := range ds {
			for int64(d.sink.LogRecordCount()) < want[i] {
				if time.Now().After(deadline) || !col.Running() {
					return false
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		return true
	}
	// short says how many records each backend still lacks.
	short := func(want []int64) string {
		var parts []string
		for i, d := range ds {
			parts = append(parts, fmt.Sprintf("%s %d of %d", d.name, int64(d.sink.LogRecordCount()), want[i]))
		}
		return strings.Join(parts, ", ")
	}

	// Steady: 10,000 records/s, 100 a request (upstream's load-test method).
	time.Sleep(2 * time.Second) // let startup settle
	phase0, cpu0 := time.Now(), cpuNow()
	snd := r.Sender(4, load.rate)
	snd.Send(sendCtx, steadyChunks)
	steadyProfiled := profileAsync(profile, 2*time.Second, gw.PprofAddr, variant, "steady", &res.ProfileSteady)
	waitSender(snd, 10*time.Minute)
	<-steadyProfiled
	checkAlive("steady")
	if !waitDelivered(steadyWant, 2*time.Minute) {
		t.Errorf("steady: not every record delivered: %s", short(steadyWant))
	}
	phase1, cpu1 := time.Now(), cpuNow()
	wall := phase1.Sub(phase0).Seconds()
	res.SteadyRecords = steadyN
	res.SteadyCPUPct = 100 * (cpu1 - cpu0).Seconds() / wall
	res.SteadyCPUsPerM = (cpu1 - cpu0).Seconds() / float64(steadyN) * 1e6
	var rssSum float64
	var rssN int
	for _, x := range samples {
		if x.at.After(phase0) && x.at.Before(phase1) {
			rssSum += float64(x.st.RSS)
			rssN++
			res.SteadyRSSPeak = max(res.SteadyRSSPeak, float64(x.st.RSS)/(1<<20))
		}
	}
	if rssN > 0 {
		res.SteadyRSSMean = rssSum / float64(rssN) / (1 << 20)
	}
	var lats []time.Duration
	for _, cr := range snd.Results() {
		for i := 0; i < cr.Chunk.N; i++ {
			if a := s.FirstArrival(cr.Chunk.First + int64(i)); a > 0 {
				lats = append(lats, time.Duration(a-cr.Start.UnixNano()))
			}
		}
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	if len(lats) > 0 {
		res.LatP50, res.LatP99 = lats[len(lats)/2], lats[len(lats)*99/100]
	}
	res.SteadyMissing = lost("steady", snd.Acked())

	// Saturation: 1,000-record requests as fast as the collector takes them,
	// measured until the backend has everything.
	phase2, cpu2 := time.Now(), cpuNow()
	profiled := profileAsync(profile, 0, gw.PprofAddr, variant, "saturation", &res.Profile)
	snd2 := r.Sender(8, 0)
	snd2.Send(sendCtx, satChunks)
	waitSender(snd2, 10*time.Minute)
	checkAlive("saturation")
	if !waitDelivered(satWant, 5*time.Minute) {
		checkAlive("saturation")
		t.Errorf("saturation: not every record delivered (counts since the start): %s", short(satWant))
	}
	phase3, cpu3 := time.Now(), cpuNow()
	res.SatRate = float64(satN) / phase3.Sub(phase2).Seconds()
	res.SatPerCore = float64(satN) / (cpu3 - cpu2).Seconds()
	res.SatCPUsPerM = (cpu3 - cpu2).Seconds() / float64(satN) * 1e6
	for _, x := range samples {
		if x.at.After(phase2) {
			res.SatRSSPeak = max(res.SatRSSPeak, float64(x.st.RSS)/(1<<20))
		}
	}
	res.SatMissing = lost("saturation", snd2.Acked())
	res.SatRetries = snd2.Stats().Retries
	<-profiled // the collector must outlive the profile
	time.Sleep(time.Second)
	close(stopSampling)
	<-sampled
	for i := 1; i < len(samples); i++ {
		dt := samples[i].at.Sub(samples[i-1].at).Seconds()
		res.Series = append(res.Series, point{
			T:    samples[i].at.Sub(t0).Seconds(),
			Rate: float64(samples[i].delivered-samples[i-1].delivered) / dt,
			RSS:  float64(samples[i].st.RSS) / (1 << 20),
		})
	}
	if _, err := col.Stop(time.Minute); err != nil {
		t.Errorf("stop: %v", err)
	}
	return res
}
