// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// federationConfig federates everything from a real Prometheus server the way
// the gateway does: /federate, honor_labels, match[] for every series. The
// processor block is added by the tests that use it. In collector configs a
// literal `$` in a regex must be written `$$`; the match[] here needs none.
const federationConfig = `
receivers:
  prometheus/federate:
    config:
      scrape_configs:
        - job_name: federate
          scrape_interval: 2s
          scrape_timeout: 2s
          honor_labels: true
          metrics_path: /federate
          params:
            'match[]': ['{__name__=~".+"}']
          static_configs:
            - targets: ["${env:T_PROM}"]
%s
exporters:
  otlp_http/plaintext-sink:
    endpoint: http://${env:T_SINK}
    retry_on_failure: {enabled: true, max_elapsed_time: 0}
service:
  telemetry:
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: ${env:T_METRICS_PORT}
  pipelines:
    metrics:
      receivers: [prometheus/federate]
      processors: [%s]
      exporters: [otlp_http/plaintext-sink]
`

const federationTypesBlock = `
processors:
  federation_types:
    endpoint: ${env:T_METADATA}
    refresh_interval: 2s
    timeout: 2s
    max_response_size: 1048576
`

// federation is a demo target, the Prometheus server scraping it, and a relay
// federating from that server into a sink.
type federation struct {
	target     *e2e.DemoTarget
	prom       *e2e.Prometheus
	sink       *otlpfixture.Sink
	relay      *e2e.Collector
	metricsURL string
}

// startPrometheus starts the target and a Prometheus server that has scraped it
// and evaluated the recording rule at least once.
func startPrometheus(t *testing.T) (*e2e.DemoTarget, *e2e.Prometheus) {
	t.Helper()
	target := e2e.NewDemoTarget(t)
	prom := e2e.StartPrometheus(t, e2e.PrometheusOptions{Targets: []string{target.Addr}, Rules: e2e.DemoRules})
	prom.WaitForQuery(t, `demo_request_duration_seconds_count`, 60*time.Second)
	prom.WaitForQuery(t, `job:demo_queue_depth:sum`, 60*time.Second)
	return target, prom
}

// startFederation starts the relay. metadata is the processor's endpoint; ""
// runs the receiver alone, without the processor.
func startFederation(t *testing.T, target *e2e.DemoTarget, prom *e2e.Prometheus, metadata string) *federation {
	t.Helper()
	f := &federation{target: target, prom: prom, sink: e2e.NewSink(t, otlpfixture.SinkOptions{})}
	port := e2e.FreePort(t)
	f.metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	var cfg string
	if metadata == "" {
		cfg = fmt.Sprintf(federationConfig, "", "")
	} else {
		cfg = fmt.Sprintf(federationConfig, federationTypesBlock, "federation_types")
	}
	f.relay = e2e.Start(t, cfg, e2e.Options{Env: []string{
		"T_PROM=" + prom.Addr, "T_SINK=" + f.sink.HTTPAddr, "T_METADATA=" + metadata,
		"T_METRICS_PORT=" + strconv.Itoa(port),
	}})
	return f
}

// TestFederationReceiverAloneYieldsGauges documents the problem the
// federation_types processor exists for: through /federate every series is
// untyped, and the prometheus receiver turns every one of them into a Gauge.
func TestFederationReceiverAloneYieldsGauges(t *testing.T) {
	target, prom := startPrometheus(t)
	f := startFederation(t, target, prom, "")

	c := waitMetric(t, f.sink, "demo_requests_total", pmetric.MetricTypeGauge, 90*time.Second)
	t.Logf("counter resource %v", c.resource.Attributes().AsRaw())
	a := numberPoint(t, c.metric.Gauge().DataPoints(), "path", "/a")
	if a.DoubleValue() != 42 {
		t.Errorf("demo_requests_total{path=/a} = %v, want 42", a.DoubleValue())
	}
	if attr(c.resource.Attributes(), "service.name") != "demo" {
		t.Errorf("resource %v: the original job should be service.name (honor_labels)", c.resource.Attributes().AsRaw())
	}
	t.Logf("counter point attributes %v start %s", a.Attributes().AsRaw(), a.StartTimestamp())

	b := waitMetric(t, f.sink, "demo_request_duration_seconds_bucket", pmetric.MetricTypeGauge, 30*time.Second)
	if attr(b.metric.Gauge().DataPoints().At(0).Attributes(), "le") == "" {
		t.Errorf("bucket points have no le attribute: %v", b.metric.Gauge().DataPoints().At(0).Attributes().AsRaw())
	}
	for _, n := range []string{"demo_request_duration_seconds_sum", "demo_request_duration_seconds_count",
		"demo_response_size_bytes", "demo_response_size_bytes_sum", "demo_response_size_bytes_count",
		"demo_temperature_celsius", "job:demo_queue_depth:sum"} {
		waitMetric(t, f.sink, n, pmetric.MetricTypeGauge, 30*time.Second)
	}
	if _, ok := latest(f.sink, "demo_request_duration_seconds"); ok {
		t.Error("a histogram arrived without the processor")
	}
}

// TestFederationTypesRestored runs the full path with the processor and
// compares what reaches the backend with what the target exposes.
func TestFederationTypesRestored(t *testing.T) {
	target, prom := startPrometheus(t)
	f := startFederation(t, target, prom, prom.URL)
	want, err := target.Gather()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("counter", func(t *testing.T) {
		c := waitMetric(t, f.sink, "demo_requests_total", pmetric.MetricTypeSum, 90*time.Second)
		s := c.metric.Sum()
		if !s.IsMonotonic() || s.AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
			t.Errorf("sum monotonic=%v temporality=%s", s.IsMonotonic(), s.AggregationTemporality())
		}
		if c.metric.Description() != "Requests handled by the demo target." {
			t.Errorf("description %q, want the target's help", c.metric.Description())
		}
		for path, v := range map[string]float64{"/a": 42, "/b": 7} {
			dp := numberPoint(t, s.DataPoints(), "path", path)
			if dp.DoubleValue() != v {
				t.Errorf("%s = %v, want %v", path, dp.DoubleValue(), v)
			}
			if dp.StartTimestamp() == 0 || dp.StartTimestamp() > dp.Timestamp() {
				t.Errorf("%s start %s, time %s: want a start time not after the point", path, dp.StartTimestamp(), dp.Timestamp())
			}
		}
	})

	t.Run("histogram", func(t *testing.T) {
		h := waitMetric(t, f.sink, "demo_request_duration_seconds", pmetric.MetricTypeHistogram, 60*time.Second)
		dp := histogramMatchesTarget(t, h.metric, want)
		if attr(dp.Attributes(), "path") != "/a" || attr(dp.Attributes(), "le") != "" {
			t.Errorf("attributes %v, want path=/a and no le", dp.Attributes().AsRaw())
		}
		if dp.StartTimestamp() == 0 || dp.StartTimestamp() > dp.Timestamp() {
			t.Errorf("start %s time %s", dp.StartTimestamp(), dp.Timestamp())
		}
		for _, gone := range []string{"demo_request_duration_seconds_bucket", "demo_request_duration_seconds_count"} {
			if g, ok := latest(f.sink, gone); ok && g.metric.Type() == pmetric.MetricTypeGauge {
				// Allowed only from a scrape before the metadata was read; the
				// processor reads it at start, so there should be none.
				t.Errorf("%s still arrives as a gauge", gone)
			}
		}
	})

	t.Run("summary", func(t *testing.T) {
		s := waitMetric(t, f.sink, "demo_response_size_bytes", pmetric.MetricTypeSummary, 60*time.Second)
		dp := s.metric.Summary().DataPoints().At(0)
		ts := want["demo_response_size_bytes"].GetMetric()[0].GetSummary()
		if dp.Count() != ts.GetSampleCount() || dp.Sum() != ts.GetSampleSum() {
			t.Errorf("count %d sum %v, target has %d and %v", dp.Count(), dp.Sum(), ts.GetSampleCount(), ts.GetSampleSum())
		}
		var qs []float64
		for i := range dp.QuantileValues().Len() {
			qs = append(qs, dp.QuantileValues().At(i).Quantile())
		}
		if !slices.Equal(qs, []float64{0.5, 0.9, 0.99}) {
			t.Errorf("quantiles %v, want 0.5 0.9 0.99", qs)
		}
		for i, q := range ts.GetQuantile() {
			if got := dp.QuantileValues().At(i).Value(); got != q.GetValue() && !(math.IsNaN(got) && math.IsNaN(q.GetValue())) {
				t.Errorf("quantile %v = %v, target has %v", q.GetQuantile(), got, q.GetValue())
			}
		}
	})

	t.Run("gauges stay gauges", func(t *testing.T) {
		g := waitMetric(t, f.sink, "demo_temperature_celsius", pmetric.MetricTypeGauge, 30*time.Second)
		if v := numberPoint(t, g.metric.Gauge().DataPoints(), "room", "lab").DoubleValue(); v != 21.5 {
			t.Errorf("temperature %v", v)
		}
		r := waitMetric(t, f.sink, "job:demo_queue_depth:sum", pmetric.MetricTypeGauge, 30*time.Second)
		if v := r.metric.Gauge().DataPoints().At(0).DoubleValue(); v != 7 {
			t.Errorf("recording rule value %v, want 3+4", v)
		}
		waitMetric(t, f.sink, "demo_queue_depth", pmetric.MetricTypeGauge, 30*time.Second)
	})

	t.Run("self-telemetry", func(t *testing.T) {
		m := scrapeSelf(t, f.metricsURL)
		for _, typ := range []string{"counter", "histogram", "summary"} {
			if v, _ := m.Sum("otelcol_processor_federation_types_families_retyped", map[string]string{"type": typ}); v < 1 {
				t.Errorf("families_retyped{type=%s} = %v, want at least 1", typ, v)
			}
		}
		if v, _ := m.Sum("otelcol_processor_federation_types_metadata_age", nil); v < 0 || v > 60 {
			t.Errorf("metadata age %v s with refresh_interval 2s", v)
		}
		if !m.Has("otelcol_processor_federation_types_ambiguous_families") {
			t.Error("no ambiguous_families gauge")
		}
	})
}

// TestFederationCounterResetAdvancesStart restarts the target with lower
// counter values and expects a new, later start time.
func TestFederationCounterResetAdvancesStart(t *testing.T) {
	target, prom := startPrometheus(t)
	f := startFederation(t, target, prom, prom.URL)
	c := waitMetric(t, f.sink, "demo_requests_total", pmetric.MetricTypeSum, 90*time.Second)
	before := numberPoint(t, c.metric.Sum().DataPoints(), "path", "/a")
	start0, ts0 := before.StartTimestamp(), before.Timestamp()

	target.Restart(3, 1)
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, _ = latest(f.sink, "demo_requests_total")
		dp := numberPoint(t, c.metric.Sum().DataPoints(), "path", "/a")
		if dp.DoubleValue() == 3 {
			if dp.StartTimestamp() <= start0 || dp.StartTimestamp() <= ts0 {
				t.Errorf("after the reset start %s, before it start %s and last sample %s: the start must advance past the old samples",
					dp.StartTimestamp(), start0, ts0)
			}
			if dp.StartTimestamp() > dp.Timestamp() {
				t.Errorf("start %s after the point %s", dp.StartTimestamp(), dp.Timestamp())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reset value 3 never arrived (last %v)", dp.DoubleValue())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
