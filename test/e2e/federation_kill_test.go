// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// federationRig is config/federation.yaml with the federation StatefulSet's
// environment (deploy/components/federation, shard 0) scraping a real Prometheus, exporting to a
// TLS sink; its queue directory stays across restarts like the pod's PVC.
type federationRig struct {
	prom     *e2e.Prometheus
	sink     *otlpfixture.Sink
	gw       *e2e.Gateway
	args     []string
	interval time.Duration
}

// newFederationRig scrapes targets (the demo target when none) with a Prometheus
// scraping every promInterval (1s when zero), and federates every interval.
func newFederationRig(t *testing.T, interval time.Duration, targets []string, promInterval time.Duration, env ...string) *federationRig {
	t.Helper()
	// Prometheus itself ignores the token (no authenticating proxy: not the
	// subject here).
	files := newInClusterFiles(t, federationToken)
	rules := ""
	if len(targets) == 0 {
		targets, rules = []string{e2e.NewDemoTarget(t).Addr}, e2e.DemoRules
	}
	prom := e2e.StartPrometheus(t, e2e.PrometheusOptions{
		Targets: targets, Rules: rules, Interval: promInterval, TLS: files.prometheusTLS(),
	})
	prom.WaitForQuery(t, `up == 1`, time.Minute)
	sink, gw := newFederationGateway(t, files, prom.Addr, append([]string{
		// Prometheus durations have no fractions: milliseconds.
		fmt.Sprintf("RELAY_FEDERATION_INTERVAL=%dms", interval.Milliseconds()),
		fmt.Sprintf("RELAY_FEDERATION_TIMEOUT=%dms", (interval * 4 / 5).Milliseconds()),
	}, env...)...)
	return &federationRig{prom: prom, sink: sink, gw: gw, args: []string{"--config=" + gatewayConfig("federation.yaml")}, interval: interval}
}

func (f *federationRig) start(t *testing.T) *e2e.Collector {
	t.Helper()
	return e2e.Start(t, "", e2e.Options{Env: f.gw.Env, Args: f.args, ReadyTimeout: 90 * time.Second})
}

// scrapeTimes returns the distinct times of the federation scrapes that reached
// the sink, sorted: the timestamps of the `up` points the receiver writes for its
// own target (job federate). Federated series carry Prometheus's timestamps.
func (f *federationRig) scrapeTimes() []time.Time {
	seen := map[pcommon.Timestamp]bool{}
	for _, md := range f.sink.Metrics() {
		rms := md.ResourceMetrics()
		for i := range rms.Len() {
			if attr(rms.At(i).Resource().Attributes(), "service.name") != "federate" {
				continue
			}
			sms := rms.At(i).ScopeMetrics()
			for j := range sms.Len() {
				ms := sms.At(j).Metrics()
				for k := range ms.Len() {
					if ms.At(k).Name() != "up" {
						continue
					}
					dps := ms.At(k).Gauge().DataPoints()
					for l := range dps.Len() {
						seen[dps.At(l).Timestamp()] = true
					}
				}
			}
		}
	}
	out := make([]time.Time, 0, len(seen))
	for ts := range seen {
		out = append(out, ts.AsTime())
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// acceptedPoints is what the federation receiver has handed to the pipeline; the
// counter moves once per scrape, after the scrape is in the persistent queue.
func (f *federationRig) acceptedPoints() float64 {
	return e2e.MetricSum(f.gw.MetricsAddr, "otelcol_receiver_accepted_metric_points")
}

func (f *federationRig) metricsQueueBytes() float64 {
	return metricsQueueBytes(f.gw.MetricsAddr)
}

// TestFederationPodKilled (a bad case): the federation pod is killed
// (SIGKILL, as an OOM kill or a node failure does) mid-interval while the backend
// is down and scrapes are queued, stays down for two intervals, and starts again
// on its volume. What it loses is measured and logged:
//   - scrapes queued at the kill survive on the volume and are delivered (the
//     queue is persistent; an in-memory one would lose them all);
//   - the scrapes that fall in the downtime are never taken, and /federate has
//     no history to fetch them later: the time without data beyond the normal
//     interval is at most the downtime plus one interval (the first scrape comes
//     within an interval of the start: discovery_reload_on_startup);
//   - a scrape the kill interrupts before it reached the queue is lost with it
//     (it counts in the gap).
func TestFederationPodKilled(t *testing.T) {
	const interval = 3 * time.Second
	f := newFederationRig(t, interval, nil, 0)
	col := f.start(t)
	if !otlpfixture.WaitFor(time.Minute, func() bool { return len(f.scrapeTimes()) >= 3 }) {
		t.Fatalf("fewer than 3 federation scrapes reached the backend within a minute: %v", f.scrapeTimes())
	}

	// Backend down: scrapes go on and pile up in the queue. Count the scrapes the
	// receiver completed (the accepted counter steps once per scrape).
	f.sink.Refuse(true)
	outage := time.Now()
	last, queued := f.acceptedPoints(), 0
	if !otlpfixture.WaitFor(time.Minute, func() bool {
		if a := f.acceptedPoints(); a > last {
			last, queued = a, queued+1
		}
		return queued >= 3
	}) {
		t.Fatalf("only %d scrapes were accepted in the minute after the backend went down", queued)
	}
	// Mid-interval, the pod dies and stays down for two intervals (a node
	// failure, a reschedule, an image pull), then starts on its volume.
	time.Sleep(interval / 2)
	queueBytes := f.metricsQueueBytes()
	col.Kill()
	killed := time.Now()
	time.Sleep(2 * interval)
	t.Logf("SIGKILL with the backend down for %s: %d scrapes accepted since then, metrics queue %.0f bytes", killed.Sub(outage).Round(100*time.Millisecond), queued, queueBytes)
	if queueBytes <= 0 {
		t.Errorf("the metrics queue held %.0f bytes with the backend down: nothing was queued at the kill", queueBytes)
	}

	col = f.start(t)
	downtime := time.Since(killed)
	f.sink.Refuse(false)
	var before, after []time.Time
	queuedArrived := 0
	split := func() {
		before, after, queuedArrived = nil, nil, 0
		for _, x := range f.scrapeTimes() {
			switch {
			case x.After(killed):
				after = append(after, x)
			case !x.Before(outage):
				before, queuedArrived = append(before, x), queuedArrived+1
			default:
				before = append(before, x)
			}
		}
	}
	// Until the backlog has landed and two scrapes of the new process arrived.
	otlpfixture.WaitFor(time.Minute, func() bool { split(); return queuedArrived >= queued && len(after) >= 2 })
	if len(before) == 0 || len(after) == 0 {
		t.Fatalf("scrapes before the kill %d, after %d: %v", len(before), len(after), f.scrapeTimes())
	}
	gap := after[0].Sub(before[len(before)-1])
	lost := gap - interval
	missed := int((gap+interval/2)/interval) - 1
	t.Logf("measured: downtime (SIGKILL to ready) %s; last scrape before the kill %s before it, first after it %s after it: %s without data beyond the %s interval, %d scrapes missed; %d of %d scrapes queued at the kill delivered after the restart",
		downtime.Round(10*time.Millisecond), killed.Sub(before[len(before)-1]).Round(10*time.Millisecond), after[0].Sub(killed).Round(10*time.Millisecond),
		lost.Round(10*time.Millisecond), interval, missed, queuedArrived, queued)

	if queuedArrived < queued {
		t.Errorf("%d scrapes were accepted into the queue before the kill, %d of them arrived: the persistent queue lost data", queued, queuedArrived)
	}
	// One second of slack: the receiver's own clock versus ours.
	if bound := downtime + interval + time.Second; lost > bound {
		t.Errorf("%s without data beyond the interval, more than the downtime %s plus one interval", lost, downtime)
	}
	// It scrapes on its cadence again.
	var steady []string
	for i := 1; i < len(after); i++ {
		if d := after[i].Sub(after[i-1]); d > interval+interval/2 {
			steady = append(steady, fmt.Sprintf("%s at %s", d, after[i].Format(time.TimeOnly)))
		}
	}
	if len(steady) > 0 {
		t.Errorf("after the restart, scrapes still skip intervals: %s", strings.Join(steady, ", "))
	}
	if !col.Running() {
		t.Fatal("the restarted federation exited")
	}
}
