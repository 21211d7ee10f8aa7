// SPDX-License-Identifier: Apache-2.0

package main

import (
	"flag"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/scenario"
)

var (
	scenarioList = flag.String("scenario-list", "overload,outage,kill9,sigterm,soak,scalein", "with -scenarios: which reliability scenarios to run, comma separated (-runs 0 -scenario-list soak runs the churn soak alone)")
	soakDur      = flag.Duration("soak", 4*time.Minute, "churn soak: about this long, in cycles of -soak-down + -soak-up (at least 3)")
	soakRate     = flag.Float64("soak-rate", 5000, "churn soak: steady load throughout, records/s")
	soakDown     = flag.Duration("soak-down", 20*time.Second, "churn soak: backend outage per cycle")
	scaleInRecs  = flag.Int("scalein-records", 1200000, "scale-in during an outage: records queued over three relays with the backend down, a third each (400,000 is about 440 MiB, near a full default queue)")
	scaleInQueue = flag.Int64("scalein-queue-bytes", 2<<30, "scale-in during an outage: each relay's logs queue bound (OTEL_EXPORTER_DEFAULT_QUEUE_BYTES), so that the two peers have room for the leaving relay's queue on top of their own")
	soakUp       = flag.Duration("soak-up", 30*time.Second, "churn soak: least time the backend is up per cycle (longer until the backlog has arrived)")
)

// wantScenario says whether -scenario-list names the scenario.
func wantScenario(name string) bool {
	return slices.Contains(strings.Split(*scenarioList, ","), name)
}

// scenarioRun is one reliability scenario (internal/scenario, the same code
// test/reliability runs small) at full scale, with its outcome.
type scenarioRun struct {
	key           string // its name in -scenario-list
	Name, Variant string
	scenario.Result
	Err string
}

func runScenarios(satRate float64, satChunks []e2e.Chunk) []*scenarioRun {
	var out []*scenarioRun
	run := func(sc *scenarioRun, maxSeq int64, f func(t *runTB, r *scenario.Rig, res *scenario.Result)) {
		if !wantScenario(sc.key) {
			return
		}
		log.Printf("scenario %s (%s)", sc.Name, sc.Variant)
		if err := measure(sc.Name, func(t *runTB) { rig, _ := startVariant(t, sc.Variant, maxSeq); f(t, rig, &sc.Result) }); err != nil {
			sc.Err = err.Error()
		}
		out = append(out, sc)
	}

	run(&scenarioRun{key: "overload", Name: "overload 3x in a 512 MiB cgroup", Variant: "gateway"}, int64(*overloadMax), func(t *runTB, r *scenario.Rig, res *scenario.Result) {
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
	run(&scenarioRun{key: "outage", Name: "backend outage", Variant: "gateway"}, int64(*outageRate*outageDur.Seconds()), func(t *runTB, r *scenario.Rig, res *scenario.Result) {
		scenario.RunBackendOutage(t, r, outage, res)
	})

	total := scenario.Records(satChunks)
	maxSeq := satChunks[0].First + int64(total)
	for _, v := range []string{"gateway", "upstream"} {
		kill9 := scenario.Restart{
			Chunks: satChunks, Workers: 8, StopAt: total / 3, Drain: true,
			Settle: 10 * time.Minute, Deliver: 5 * time.Minute,
		}
		run(&scenarioRun{key: "kill9", Name: "kill -9 under load", Variant: v}, maxSeq, func(t *runTB, r *scenario.Rig, res *scenario.Result) {
			scenario.RunKill9(t, r, kill9, res)
		})
	}

	sigterm := scenario.Restart{
		Chunks: satChunks, Workers: 8, StopAt: total / 3, Drain: true,
		Settle: 10 * time.Minute, Deliver: 5 * time.Minute,
	}
	run(&scenarioRun{key: "sigterm", Name: "SIGTERM under load, restart", Variant: "gateway"}, maxSeq, func(t *runTB, r *scenario.Rig, res *scenario.Result) {
		scenario.RunSIGTERM(t, r, sigterm, res)
	})

	soak := scenario.ChurnSoak{
		Rate: *soakRate, Cycles: max(3, int(*soakDur/(*soakDown+*soakUp))), Down: *soakDown, Up: *soakUp,
		DrainTimeout: 3 * time.Minute, Sample: time.Second, MaxGrowth: 1.5,
		Settle: 5 * time.Minute, Deliver: 10 * time.Minute,
	}
	run(&scenarioRun{key: "soak", Name: "churn soak", Variant: "gateway"}, int64(soak.Records()), func(t *runTB, r *scenario.Rig, res *scenario.Result) {
		scenario.RunChurnSoak(t, r, soak, res)
	})

	// Three relays of its own (peers), not a variant's rig: the shipped
	// hand-off settings, and an outage long enough that the exporters'
	// retries wait their longest (retry_on_failure::max_interval).
	if wantScenario("scalein") {
		sc := &scenarioRun{key: "scalein", Name: "scale-in during an outage, hand-off to a peer", Variant: "gateway"}
		log.Printf("scenario %s (%s)", sc.Name, sc.Variant)
		scaleIn := scenario.ScaleIn{
			Records: *scaleInRecs, Workers: 8, Outage: 45 * time.Second,
			StartAfter: 30 * time.Second, DrainTimeout: 100 * time.Second,
			Settle: 10 * time.Minute, Deliver: 10 * time.Minute, MaxSeq: int64(*scaleInRecs),
			Env: []string{fmt.Sprintf("OTEL_EXPORTER_DEFAULT_QUEUE_BYTES=%d", *scaleInQueue)},
		}
		if err := measure(sc.Name, func(t *runTB) { scenario.RunScaleInHandoff(t, scaleIn, &sc.Result) }); err != nil {
			sc.Err = err.Error()
		}
		out = append(out, sc)
	}
	return out
}
