// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// TestFederationBackendOutageQueueFull: with the backend down, federation keeps
// scraping into its persistent queue until the bound is reached; after that each
// scrape is refused as a whole, counted (otelcol_receiver_refused_metric_points)
// and lost: /federate has no history to fetch it from later. When the backend
// returns, every queued scrape is delivered and federation goes on. The bound is
// made small here (about three scrapes) to reach it quickly; how long the default
// 2 GiB lasts is measured by TestFederationCapacity (deploy/docs/sizing.md).
func TestFederationBackendOutageQueueFull(t *testing.T) {
	const interval = 2 * time.Second
	// A demo scrape is ~2.8 KB in the queue: three fit, the fourth does not.
	f := newFederationRig(t, interval, nil, 0, "OTEL_EXPORTER_DEFAULT_QUEUE_BYTES=9000")
	col := f.start(t)
	if !otlpfixture.WaitFor(time.Minute, func() bool { return len(f.scrapeTimes()) >= 2 }) {
		t.Fatalf("fewer than 2 scrapes reached the backend: %v", f.scrapeTimes())
	}

	f.sink.Refuse(true)
	outage := time.Now()
	refused := func() float64 {
		return max(0, e2e.MetricSum(f.gw.MetricsAddr, "otelcol_receiver_refused_metric_points"))
	}
	r0 := refused()
	// Until at least two scrapes have been refused on the full queue.
	last, accepted, refusals := f.acceptedPoints(), 0, 0
	lastRefused := r0
	if !otlpfixture.WaitFor(time.Minute, func() bool {
		if a := f.acceptedPoints(); a > last {
			last, accepted = a, accepted+1
		}
		if r := refused(); r > lastRefused {
			lastRefused, refusals = r, refusals+1
		}
		return refusals >= 2
	}) {
		t.Fatalf("with the backend down for a minute and a ~3-scrape bound, %d scrapes were refused (%d accepted)", refusals, accepted)
	}
	queued := f.metricsQueueBytes()
	recovered := time.Now()
	f.sink.Refuse(false)
	t.Logf("backend down %s: %d scrapes queued (%.0f bytes), then %d refused (%.0f points) once the queue was full",
		recovered.Sub(outage).Round(100*time.Millisecond), accepted, queued, refusals, lastRefused-r0)
	if accepted == 0 || accepted > 4 {
		t.Errorf("%d scrapes were accepted into a queue bounded to about 3", accepted)
	}

	// Every queued scrape arrives; the refused ones are the gap.
	var during []time.Time
	if !otlpfixture.WaitFor(time.Minute, func() bool {
		during = during[:0]
		for _, x := range f.scrapeTimes() {
			if x.After(outage) && x.Before(recovered) {
				during = append(during, x)
			}
		}
		return len(during) >= accepted
	}) {
		t.Errorf("%d scrapes were queued during the outage, %d arrived after it: %v", accepted, len(during), during)
	}
	var gaps []string
	for i := 1; i < len(during); i++ {
		gaps = append(gaps, during[i].Sub(during[i-1]).Round(100*time.Millisecond).String())
	}
	t.Logf("scrapes of the outage that arrived: %d, spaced %v; then nothing until %s after the outage began",
		len(during), gaps, recovered.Sub(outage).Round(100*time.Millisecond).String())
	n := len(f.scrapeTimes())
	if !otlpfixture.WaitFor(time.Minute, func() bool { return len(f.scrapeTimes()) >= n+2 }) {
		t.Error("federation did not resume after the backend came back")
	}
	if !col.Running() {
		t.Fatal("federation exited with a full queue")
	}
}
