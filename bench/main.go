// SPDX-License-Identifier: Apache-2.0

// Command bench measures otelcol-relay's gateway side by side with the floor
// (pdata decode/encode/compress in process) and the same pipeline with upstream's
// default settings, interleaved, and runs the reliability scenarios at full
// scale. It writes bench/results/<name>.md and <name>.png.
//
//	make build && OTELCOL_RELAY_BIN=bin/otelcol-relay go run ./bench [-runs 3] [-name gateway]
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	kgzip "github.com/klauspost/compress/gzip"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/scenario"
)

var (
	name        = flag.String("name", "gateway", "results name: bench/results/<name>.md and .png")
	runs        = flag.Int("runs", 3, "runs of each variant, interleaved; medians are reported")
	steadyDur   = flag.Duration("steady", 20*time.Second, "duration of the steady-rate phase")
	steadyRate  = flag.Float64("rate", 10000, "steady rate, records/s (100 records a request)")
	satRecords  = flag.Int("sat-records", 300000, "records sent as fast as possible for saturation (1,000 a request)")
	scenarios   = flag.Bool("scenarios", true, "run the reliability scenarios at full scale")
	overloadDur = flag.Duration("overload", 60*time.Second, "overload duration (offered at 3x the measured saturation)")
	overloadMax = flag.Int("overload-records", 1500000, "cap on pre-encoded records for the overload")
	outageDur   = flag.Duration("outage", 60*time.Second, "backend outage duration")
	outageRate  = flag.Float64("outage-rate", 5000, "steady load during the outage, records/s")
	altBin      = flag.String("alt-bin", "", "another build of the collector: variants named <variant>-alt run <variant> on it, interleaved with the others (a patched dependency against the shipped one)")
	outDir      = flag.String("out", "", "results directory (default <repo>/bench/results)")
	variantList = flag.String("variants", "floor,gateway,gateway-memory,upstream,upstream-file", "variants to run, comma separated, in this order on odd runs and reversed on even ones (see variants.go)")
)

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	if _, err := e2e.EnsureBinary(); err != nil {
		log.Fatal(err)
	}
	if *outDir == "" {
		*outDir = filepath.Join(e2e.RepoRoot(), "bench", "results")
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		log.Fatal(err)
	}
	r := &report{Name: *name, Started: time.Now(), Command: "go run ./bench " + strings.Join(os.Args[1:], " ")}

	log.Printf("pre-encoding payloads")
	steadyN := int(*steadyRate * steadyDur.Seconds())
	steadyChunks := e2e.EncodeChunks(0, steadyN/100, 100)
	satChunks := e2e.EncodeChunks(int64(steadyN), *satRecords/1000, 1000)
	r.PayloadBytes = avgRecordBytes(satChunks[0])

	for _, v := range strings.Split(*variantList, ",") {
		if runsAlt(v) && *altBin == "" {
			log.Fatalf("variant %s runs on another build: set -alt-bin", v)
		}
	}
	for i := 0; i < *runs; i++ {
		order := strings.Split(*variantList, ",")
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, v := range order {
			log.Printf("run %d/%d: %s", i+1, *runs, v)
			var res *runResult
			var err error
			if isFloor(v) {
				res = runFloor(v, satChunks)
			} else {
				err = measure(v, func(t *runTB) { res = runVariant(t, v, steadyChunks, satChunks, i == *runs-1) })
			}
			if err != nil {
				log.Printf("%s run %d: %v", v, i+1, err)
				r.Errors = append(r.Errors, err.Error())
				continue
			}
			res.Variant = v
			r.Runs = append(r.Runs, res)
			// Each run's own figures, so that a spread can be read back (the
			// report keeps only medians and extremes).
			log.Printf("run %d/%d: %s: %.1f CPU-s per million at %.0f/s, %.1f at saturation (%d requests retried)", i+1, *runs, v, res.SteadyCPUsPerM, *steadyRate, res.SatCPUsPerM, res.SatRetries)
		}
	}

	if *scenarios {
		sat := r.median("gateway", func(x *runResult) float64 { return x.SatRate })
		r.Scenarios = runScenarios(sat, satChunks)
	}
	r.Finished = time.Now()
	if err := r.write(*outDir); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s", filepath.Join(*outDir, *name+".md"))
}

func avgRecordBytes(c e2e.Chunk) float64 {
	zr, err := gzip.NewReader(bytes.NewReader(c.Body))
	if err != nil {
		return 0
	}
	raw, _ := io.ReadAll(zr)
	return float64(len(raw)) / float64(c.N)
}

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
	// Timeline for the plot (the last run).
	Series                 []point
	Profile, ProfileSteady string
}

type point struct {
	T    float64 // seconds since start
	Rate float64 // records/s delivered
	RSS  float64 // MiB
}

// gzipWriter is what the floor needs of a gzip implementation.
type gzipWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// runFloor measures in process what no relay can avoid: gunzip, unmarshal,
// marshal and gzip at the default level of the same payload. "floor" gzips with
// the standard library, the floor of measuring.md; "floor-klauspost" with
// klauspost/compress, which otlp_http_wire uses since session 5.
func runFloor(variant string, chunks []e2e.Chunk) *runResult {
	workers := 1
	if variant == "floor-parallel" {
		workers = runtime.GOMAXPROCS(0)
	}
	before := rusage()
	start := time.Now()
	var n atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var out bytes.Buffer
			var zw gzipWriter
			if variant == "floor-klauspost" {
				zw, _ = kgzip.NewWriterLevel(&out, kgzip.DefaultCompression)
			} else {
				zw, _ = gzip.NewWriterLevel(&out, gzip.DefaultCompression)
			}
			// Three passes: one pass over 100,000 records lasts about a
			// second, short enough for a neighbour's burst to move the median.
			for pass := 0; pass < 3; pass++ {
				for i := w; i < len(chunks); i += workers {
					floorOne(chunks[i], zw, &out)
					n.Add(int64(chunks[i].N))
				}
			}
		})
	}
	wg.Wait()
	cpu := (rusage() - before).Seconds()
	wall := time.Since(start).Seconds()
	total := float64(n.Load())
	return &runResult{SatRate: total / wall, SatPerCore: total / cpu, SatCPUsPerM: cpu / total * 1e6}
}

// floorOne is the floor's work for one request: gunzip, unmarshal, marshal, gzip.
func floorOne(c e2e.Chunk, zw gzipWriter, out *bytes.Buffer) {
	zr, err := gzip.NewReader(bytes.NewReader(c.Body))
	if err != nil {
		log.Fatal(err)
	}
	raw, _ := io.ReadAll(zr)
	req := plogotlp.NewExportRequest()
	if err := req.UnmarshalProto(raw); err != nil {
		log.Fatal(err)
	}
	enc, _ := req.MarshalProto()
	out.Reset()
	zw.Reset(out)
	_, _ = zw.Write(enc)
	_ = zw.Close()
}

func rusage() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startVariant prepares the gateway rig (internal/scenario) for variant against
// a sink that counts sequence numbers below maxSeq.
func startVariant(t *runTB, variant string, maxSeq int64) *scenario.Rig {
	args, err := variantConfig(variant, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	args = append(args, variantFlags(variant)...)
	return scenario.NewRig(t, scenario.RigOptions{Args: args, MaxSeq: maxSeq, Env: variantEnv(variant), Binary: variantBinary(variant)})
}

func runVariant(t *runTB, variant string, steadyChunks, satChunks []e2e.Chunk, profile bool) *runResult {
	steadyN, satN := scenario.Records(steadyChunks), scenario.Records(satChunks)
	r := startVariant(t, variant, int64(steadyN+satN))
	s, gw := r.Sink, r.GW
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
	waitDelivered := func(n int64, timeout time.Duration) bool {
		deadline := time.Now().Add(timeout)
		for int64(s.LogRecordCount()) < n {
			if time.Now().After(deadline) || !col.Running() {
				return false
			}
			time.Sleep(20 * time.Millisecond)
		}
		return true
	}

	// Steady: 10,000 records/s, 100 a request (upstream's load-test method).
	time.Sleep(2 * time.Second) // let startup settle
	phase0, cpu0 := time.Now(), cpuNow()
	snd := r.Sender(4, *steadyRate)
	snd.Send(sendCtx, steadyChunks)
	steadyProfiled := make(chan struct{})
	if profile {
		go func() {
			defer close(steadyProfiled)
			time.Sleep(2 * time.Second)
			allocs := make(chan struct{})
			go func() { defer close(allocs); fetchAllocs(gw.PprofAddr, variant, "steady") }()
			res.ProfileSteady = fetchProfile(t, gw.PprofAddr, variant, "steady")
			<-allocs
		}()
	} else {
		close(steadyProfiled)
	}
	waitSender(snd, 10*time.Minute)
	<-steadyProfiled
	checkAlive("steady")
	if !waitDelivered(int64(steadyN), 2*time.Minute) {
		t.Errorf("steady: only %d of %d records delivered", int64(s.LogRecordCount()), steadyN)
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
	res.SteadyMissing = s.Loss(snd.Acked()).Missing

	// Saturation: 1,000-record requests as fast as the collector takes them,
	// measured until the backend has everything.
	phase2, cpu2 := time.Now(), cpuNow()
	profiled := make(chan struct{})
	if profile {
		go func() {
			defer close(profiled)
			allocs := make(chan struct{})
			go func() { defer close(allocs); fetchAllocs(gw.PprofAddr, variant, "saturation") }()
			res.Profile = fetchProfile(t, gw.PprofAddr, variant, "saturation")
			<-allocs
		}()
	} else {
		close(profiled)
	}
	snd2 := r.Sender(8, 0)
	snd2.Send(sendCtx, satChunks)
	waitSender(snd2, 10*time.Minute)
	checkAlive("saturation")
	if !waitDelivered(int64(steadyN+satN), 5*time.Minute) {
		checkAlive("saturation")
		t.Errorf("saturation: only %d of %d records delivered", int64(s.LogRecordCount())-int64(steadyN), satN)
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
	res.SatMissing = s.Loss(snd2.Acked()).Missing
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

// fetchAllocs saves what the collector allocated during the same 10 s as the
// CPU profile (`go tool pprof -sample_index=alloc_space`): GC's share of the
// CPU follows the bytes allocated, and this says whose they are.
func fetchAllocs(addr, variant, phase string) {
	f := filepath.Join(*outDir, fmt.Sprintf("%s-%s-%s.allocs.pprof", *name, variant, phase))
	if err := saveProfile("http://"+addr+"/debug/pprof/allocs?seconds=10", f); err != nil {
		log.Printf("allocation profile of %s: %v", variant, err)
	}
}

// saveProfile writes what the pprof endpoint at url answers into file.
func saveProfile(url, file string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, raw, 0o644)
}

// fetchProfile takes a 10 s CPU profile from the pprof extension and returns the
// top of `go tool pprof -top`.
func fetchProfile(t *runTB, addr, variant, phase string) string {
	f := filepath.Join(*outDir, fmt.Sprintf("%s-%s-%s.pprof", *name, variant, phase))
	if err := saveProfile("http://"+addr+"/debug/pprof/profile?seconds=10", f); err != nil {
		return "profile: " + err.Error()
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", f).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("pprof: %v\n%s", err, out)
	}
	return string(out)
}
