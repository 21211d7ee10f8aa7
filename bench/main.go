// SPDX-License-Identifier: Apache-2.0

// Command bench measures otelcol-relay's gateway side by side with the floor
// (pdata decode/encode/compress in process) and the same pipeline with upstream's
// default settings, interleaved, and runs the reliability scenarios at full
// scale. It writes bench/results/<name>.md and <name>.png (by default the
// baseline, bench/results/baseline.md, which `make bench` regenerates) and the
// raw pprof profiles under bench/results/profiles/, which git ignores.
//
//	make build && OTELCOL_RELAY_BIN=bin/otelcol-relay go run ./bench [-runs 3] [-name baseline]
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

var (
	name          = flag.String("name", "baseline", "results name: bench/results/<name>.md and .png; the baseline is the one kept in git")
	runs          = flag.Int("runs", 3, "runs of each variant, interleaved; medians are reported")
	steadyDur     = flag.Duration("steady", 20*time.Second, "duration of the steady-rate phase")
	steadyRate    = flag.Float64("rate", 10000, "steady rate, records/s (100 records a request)")
	satRecords    = flag.Int("sat-records", 300000, "records sent as fast as possible for saturation (1,000 a request)")
	scenarios     = flag.Bool("scenarios", true, "run the reliability scenarios at full scale")
	overloadDur   = flag.Duration("overload", 60*time.Second, "overload duration (offered at 3x the measured saturation)")
	overloadMax   = flag.Int("overload-records", 1500000, "cap on pre-encoded records for the overload")
	outageDur     = flag.Duration("outage", 60*time.Second, "backend outage duration")
	outageRate    = flag.Float64("outage-rate", 5000, "steady load during the outage, records/s")
	altBin        = flag.String("alt-bin", "", "another build of the collector: variants named <variant>-alt run <variant> on it, interleaved with the others (a patched dependency against the shipped one)")
	outDir        = flag.String("out", "", "results directory (default <repo>/bench/results)")
	profileDir    = flag.String("profiles", "", "directory of the raw pprof profiles (default <out>/profiles, which git ignores)")
	note          = flag.String("note", "", "a sentence for the report's header: what this run is, what ran beside it")
	namespaceList = flag.String("namespaces", "", "namespaces the requests' pods take in turn, comma separated (default: payments, and those the routed variants in -variants select)")
	into          = flag.String("into", "", "write this run's report as a section of <into>.md in -out (e.g. baseline), replacing that report's section of the same -name and leaving the rest as it is, its plot as <into>-<name>.png")
	variantList   = flag.String("variants", "floor,gateway,gateway-memory,upstream,upstream-file", "variants to run, comma separated, in this order on odd runs and reversed on even ones (see variants.go)")
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
	if *profileDir == "" {
		*profileDir = filepath.Join(*outDir, "profiles")
	}
	for _, d := range []string{*outDir, *profileDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			log.Fatal(err)
		}
	}
	r := &report{Name: *name, Started: time.Now(), Command: command(os.Args[1:])}

	log.Printf("pre-encoding payloads")
	steadyN := int(*steadyRate * steadyDur.Seconds())
	r.Namespaces = loadNamespaces()
	// Each load shape of -variants (variants.go's -reqN and -bodyN), encoded
	// before the first run.
	loads := map[loadShape]*phases{}
	for _, v := range append([]string{"gateway"}, strings.Split(*variantList, ",")...) {
		if sh := shapeOf(v); loads[sh] == nil {
			loads[sh] = encodePhases(sh, steadyN, *satRecords, r.Namespaces)
		}
	}
	satChunks := loads[loadShape{}].sat
	r.PayloadBytes = loads[loadShape{}].recordBytes

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
			load := loads[shapeOf(v)]
			if isFloor(v) {
				res = runFloor(v, load.sat)
			} else {
				err = measure(v, func(t *runTB) { res = runVariant(t, v, load, r.Namespaces, i == *runs-1) })
			}
			if err != nil {
				log.Printf("%s run %d: %v", v, i+1, err)
				r.Errors = append(r.Errors, err.Error())
				continue
			}
			res.Variant = v
			res.SatRecordBytes = load.recordBytes
			r.Runs = append(r.Runs, res)
			// Each run's own figures, so that a spread can be read back (the
			// report keeps only medians and extremes).
			log.Printf("run %d/%d: %s: %.1f CPU-s per million at %.0f/s, %.1f at saturation (%d requests retried)", i+1, *runs, v, res.SteadyCPUsPerM, *steadyRate, res.SatCPUsPerM, res.SatRetries)
		}
	}

	counts, err := parsePodCounts()
	if err != nil {
		log.Fatal(err)
	}
	if len(counts) > 0 {
		if r.Pods, err = runPods(counts); err != nil {
			log.Printf("pods: %v", err)
			r.Errors = append(r.Errors, err.Error())
		}
	}
	nodeCounts, err := parseNodePodCounts()
	if err != nil {
		log.Fatal(err)
	}
	if len(nodeCounts) > 0 {
		if r.NodePods, err = runNodePods(nodeCounts); err != nil {
			log.Printf("node-pods: %v", err)
			r.Errors = append(r.Errors, err.Error())
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
	written := *name
	if *into != "" {
		written = *into
	}
	log.Printf("wrote %s", filepath.Join(*outDir, written+".md"))
}

// command is the bench's command line as a shell would take it, without
// -note, whose sentence the report prints on its own.
func command(args []string) string {
	out := []string{"go", "run", "./bench"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if f := strings.TrimLeft(a, "-"); f == "note" || strings.HasPrefix(f, "note=") {
			if f == "note" {
				i++ // its value
			}
			continue
		}
		if strings.ContainsAny(a, " '\"$`") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}

func avgRecordBytes(c e2e.Chunk) float64 {
	zr, err := gzip.NewReader(bytes.NewReader(c.Body))
	if err != nil {
		return 0
	}
	raw, _ := io.ReadAll(zr)
	return float64(len(raw)) / float64(c.N)
}
