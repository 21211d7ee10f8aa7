// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"bytes"
	"fmt"
	dto "github.com/prometheus/client_model/go"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/promtext"
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
	sink       *e2e.Sink
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
	f := &federation{target: target, prom: prom, sink: e2e.NewSink(t, e2e.SinkOptions{})}
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

// found is one metric as the sink received it, with its resource.
type found struct {
	metric   pmetric.Metric
	resource pcommon.Resource
}

// latest returns the most recently received metric called name whose points
// match the attribute filter (nil matches all).
func latest(s *e2e.Sink, name string) (found, bool) {
	batches := s.Metrics()
	for i := len(batches) - 1; i >= 0; i-- {
		rms := batches[i].ResourceMetrics()
		for j := rms.Len() - 1; j >= 0; j-- {
			sms := rms.At(j).ScopeMetrics()
			for k := range sms.Len() {
				ms := sms.At(k).Metrics()
				for l := range ms.Len() {
					if ms.At(l).Name() == name {
						return found{ms.At(l), rms.At(j).Resource()}, true
					}
				}
			}
		}
	}
	return found{}, false
}

// waitMetric waits until the sink has received name as a metric of type typ.
func waitMetric(t *testing.T, s *e2e.Sink, name string, typ pmetric.MetricType, timeout time.Duration) found {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		f, ok := latest(s, name)
		if ok && f.metric.Type() == typ {
			return f
		}
		if time.Now().After(deadline) {
			have := "never arrived"
			if ok {
				have = "arrived as " + f.metric.Type().String()
			}
			t.Fatalf("%s did not arrive as a %s within %s: %s", name, typ, timeout, have)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func attr(m pcommon.Map, k string) string {
	v, ok := m.Get(k)
	if !ok {
		return ""
	}
	return v.AsString()
}

func numberPoint(t *testing.T, dps pmetric.NumberDataPointSlice, key, value string) pmetric.NumberDataPoint {
	t.Helper()
	for i := range dps.Len() {
		if attr(dps.At(i).Attributes(), key) == value {
			return dps.At(i)
		}
	}
	t.Fatalf("no point with %s=%q", key, value)
	return pmetric.NumberDataPoint{}
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

// TestFederationMetadataDown points the processor at a port where nothing
// listens: every series still arrives, as the gauges the receiver made, and the
// failure is logged once per refresh with a reason.
func TestFederationMetadataDown(t *testing.T) {
	target, prom := startPrometheus(t)
	f := startFederation(t, target, prom, "http://"+closedAddr(t))
	for _, n := range []string{"demo_requests_total", "demo_request_duration_seconds_bucket",
		"demo_response_size_bytes", "demo_temperature_celsius", "job:demo_queue_depth:sum"} {
		waitMetric(t, f.sink, n, pmetric.MetricTypeGauge, 90*time.Second)
	}
	if err := f.relay.WaitForOutput("Metric metadata unavailable", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.relay.Output(), "connection refused") {
		t.Errorf("the log does not say why the metadata is unavailable:\n%s", f.relay.Output())
	}
	m := scrapeSelf(t, f.metricsURL)
	if v, _ := m.Sum("otelcol_processor_federation_types_metadata_refresh_failures", nil); v < 1 {
		t.Errorf("refresh failures %v, want at least 1", v)
	}
}

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestFederationBadMetadataResponses serves malformed and endless metadata:
// each is refused with a clear error in the log, data still flows as gauges,
// and the relay's memory stays bounded although the server offers gigabytes.
func TestFederationBadMetadataResponses(t *testing.T) {
	target, prom := startPrometheus(t)
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"malformed", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"status":"success","data":{"demo_requests_total":[{"type":"coun`)
		}, "malformed metadata response"},
		{"huge", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"status":"success","data":{"demo_requests_total":[{"type":"counter","help":"`)
			chunk := bytes.Repeat([]byte("x"), 256<<10)
			for range (4 << 30) / len(chunk) { // 4 GiB unless the client hangs up
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, "exceeds max_response_size (1048576 bytes)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := &http.Server{Handler: c.handler, ReadHeaderTimeout: 10 * time.Second}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = bad.Serve(l) }()
			t.Cleanup(func() { _ = bad.Close() })

			f := startFederation(t, target, prom, "http://"+l.Addr().String())
			waitMetric(t, f.sink, "demo_requests_total", pmetric.MetricTypeGauge, 90*time.Second)
			if err := f.relay.WaitForOutput(c.want, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			// Several refreshes (every 2s) later, the relay has not grown.
			time.Sleep(6 * time.Second)
			st, err := e2e.ReadProc(f.relay.PID())
			if err != nil {
				t.Fatal(err)
			}
			if hwm := st.HWM; hwm > 400<<20 {
				t.Errorf("relay peak RSS %d MiB while refusing bad metadata", hwm>>20)
			}
			if _, ok := latest(f.sink, "demo_request_duration_seconds"); ok {
				t.Error("types were restored from metadata that was refused")
			}
		})
	}
}

// scrapeSelf waits until the relay's own metrics include federation_types'
// and returns them.
func scrapeSelf(t *testing.T, url string) promtext.Families {
	t.Helper()
	var last promtext.Families
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		last, err = promtext.Get(url)
		if err == nil && last.Dump("otelcol_processor_federation_types_") != "" {
			return last
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("no federation_types self-metrics at %s (%v):\n%s", url, err, last.Dump("otelcol_"))
	return nil
}

// histogramMatchesTarget checks that m is one cumulative Histogram point whose
// bounds, per-bucket counts, count and sum are the demo target's own, and returns it.
func histogramMatchesTarget(t *testing.T, m pmetric.Metric, want map[string]*dto.MetricFamily) pmetric.HistogramDataPoint {
	t.Helper()
	if m.Histogram().AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
		t.Errorf("histogram temporality %s", m.Histogram().AggregationTemporality())
	}
	if n := m.Histogram().DataPoints().Len(); n != 1 {
		t.Fatalf("%d histogram points, want 1", n)
	}
	dp := m.Histogram().DataPoints().At(0)
	th := want["demo_request_duration_seconds"].GetMetric()[0].GetHistogram()
	var bounds []float64
	var counts []uint64
	var prev uint64
	for _, b := range th.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
		counts = append(counts, b.GetCumulativeCount()-prev)
		prev = b.GetCumulativeCount()
	}
	counts = append(counts, th.GetSampleCount()-prev)
	if !slices.Equal(bounds, e2e.DemoHistogramBuckets) {
		t.Fatalf("the target's own bounds %v differ from DemoHistogramBuckets %v", bounds, e2e.DemoHistogramBuckets)
	}
	if got := dp.ExplicitBounds().AsRaw(); !slices.Equal(got, bounds) {
		t.Errorf("histogram bounds %v, target has %v", got, bounds)
	}
	if got := dp.BucketCounts().AsRaw(); !slices.Equal(got, counts) {
		t.Errorf("histogram bucket counts %v, target has %v", got, counts)
	}
	if dp.Count() != th.GetSampleCount() || dp.Sum() != th.GetSampleSum() {
		t.Errorf("histogram count %d sum %v, target has %d and %v", dp.Count(), dp.Sum(), th.GetSampleCount(), th.GetSampleSum())
	}
	return dp
}
