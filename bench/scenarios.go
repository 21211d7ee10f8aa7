package main

import (
	"log"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/scenario"
)

// scenarioRun is one reliability scenario (internal/scenario, the same code
// test/reliability runs small) at full scale, with its outcome.
type scenarioRun struct {
	Name, Variant string
	scenario.Result
	Err string
}

func runScenarios(satRate float64, satChunks []e2e.Chunk) []*scenarioRun {
	var out []*scenarioRun
	run := func(sc *scenarioRun, maxSeq int64, f func(t *runTB, r *scenario.Rig, res *scenario.Result)) {
		log.Printf("scenario %s (%s)", sc.Name, sc.Variant)
		if err := measure(sc.Name, func(t *runTB) { f(t, startVariant(t, sc.Variant, maxSeq), &sc.Result) }); err != nil {
			sc.Err = err.Error()
		}
		out = append(out, sc)
	}

	run(&scenarioRun{Name: "overload 3x in a 512 MiB cgroup", Variant: "gateway"}, int64(*overloadMax), func(t *runTB, r *scenario.Rig, res *scenario.Result) {
		rate := 3 * satRate
		n := min(int(rate*overloadDur.Seconds()), *overloadMax)
		n -= n % 1000
		log.Printf("overload: pre-encoding %d records to offer at %.0f records/s (3x the measured saturation, %.0f)", n, rate, satRate)
		scenario.RunOverload(t, r, scenario.Overload{
			Limit: 512 << 20, Chunks: e2e.EncodeChunks(0, n/1000, 1000), Workers: 32, Rate: rate,
			Duration: *overloadDur, Settle: 10 * time.Minute, Deliver: 10 * time.Minute,
		}, res)
	})

	outage := scenario.Outage{
		Rate: *outageRate, Duration: *outageDur, Poll: 500 * time.Millisecond,
		Settle: 5 * time.Minute, Deliver: 10 * time.Minute,
	}
	run(&scenarioRun{Name: "backend outage", Variant: "gateway"}, int64(*outageRate*outageDur.Seconds()), func(t *runTB, r *scenario.Rig, res *scenario.Result) {
		scenario.RunBackendOutage(t, r, outage, res)
	})

	total := scenario.Records(satChunks)
	maxSeq := satChunks[0].First + int64(total)
	for _, v := range []string{"gateway", "upstream"} {
		kill9 := scenario.Restart{
			Chunks: satChunks, Workers: 8, StopAt: total / 3, Drain: true,
			Settle: 10 * time.Minute, Deliver: 5 * time.Minute,
		}
		run(&scenarioRun{Name: "kill -9 under load", Variant: v}, maxSeq, func(t *runTB, r *scenario.Rig, res *scenario.Result) {
			scenario.RunKill9(t, r, kill9, res)
		})
	}

	sigterm := scenario.Restart{
		Chunks: satChunks, Workers: 8, StopAt: total / 3, Drain: true,
		Settle: 10 * time.Minute, Deliver: 5 * time.Minute,
	}
	run(&scenarioRun{Name: "SIGTERM under load, restart", Variant: "gateway"}, maxSeq, func(t *runTB, r *scenario.Rig, res *scenario.Result) {
		scenario.RunSIGTERM(t, r, sigterm, res)
	})
	return out
}
