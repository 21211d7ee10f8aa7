// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

var t0 = time.Unix(1_700_000_000, 0)

func TestCounterBecomesMonotonicCumulativeSum(t *testing.T) {
	p := newDemoProcessor(t)

	s := newScrape(t0)
	s.add("demo_requests_total", 42, "path", "/a")
	s.add("demo_requests_total", 7, "path", "/b")
	out := p.process(t, s.md)

	m := mustMetric(t, out, "demo_requests_total", pmetric.MetricTypeSum)
	if !m.Sum().IsMonotonic() || m.Sum().AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
		t.Fatalf("sum is monotonic=%v temporality=%s, want monotonic cumulative", m.Sum().IsMonotonic(), m.Sum().AggregationTemporality())
	}
	if m.Description() != "Requests handled by the demo target." {
		t.Errorf("description %q not taken from metadata", m.Description())
	}
	dps := m.Sum().DataPoints()
	if dps.Len() != 2 {
		t.Fatalf("%d points, want 2", dps.Len())
	}
	for i := range dps.Len() {
		dp := dps.At(i)
		if dp.StartTimestamp() != s.ts {
			t.Errorf("first point start %s, want the first sample's time %s", dp.StartTimestamp(), s.ts)
		}
		if p, _ := dp.Attributes().Get("path"); p.Str() == "/a" && dp.DoubleValue() != 42 {
			t.Errorf("value %v, want 42", dp.DoubleValue())
		}
	}

	// Later samples keep the start; a lower value is a reset and starts anew
	// right after the previous sample.
	startOf := func(ts time.Time, v float64) pcommon.Timestamp {
		later := newScrape(ts)
		later.add("demo_requests_total", v, "path", "/a")
		return mustMetric(t, p.process(t, later.md), "demo_requests_total", pmetric.MetricTypeSum).Sum().DataPoints().At(0).StartTimestamp()
	}
	if got := startOf(t0.Add(15*time.Second), 50); got != s.ts {
		t.Errorf("start after growth %s, want unchanged %s", got, s.ts)
	}
	// Federation hands out the same sample again if the target was not scraped
	// in between: same timestamp, no reset.
	if got := startOf(t0.Add(15*time.Second), 50); got != s.ts {
		t.Errorf("start after a repeated sample %s, want unchanged %s", got, s.ts)
	}
	resetAt := t0.Add(30 * time.Second)
	want := pcommon.NewTimestampFromTime(t0.Add(15*time.Second + time.Millisecond))
	if got := startOf(resetAt, 3); got != want {
		t.Errorf("start after reset %s, want %s (just after the last sample before the reset)", got, want)
	}
	if got := startOf(t0.Add(45*time.Second), 9); got != want {
		t.Errorf("start after the reset is not kept: %s, want %s", got, want)
	}
	// A sample older than the last one seen (out of order) neither resets nor
	// gets a start after its own timestamp.
	if got := startOf(t0.Add(10*time.Second), 1); got > pcommon.NewTimestampFromTime(t0.Add(10*time.Second)) {
		t.Errorf("out-of-order sample got start %s after its timestamp", got)
	}

	retyped, err := p.tel.GetMetric(metricFamiliesRetyped)
	if err != nil {
		t.Fatal(err)
	}
	if got := sumByType(retyped)["counter"]; got != 6 {
		t.Errorf("families_retyped{type=counter} = %d, want 6 (one per batch)", got)
	}
}

func sumByType(m metricdata.Metrics) map[string]int64 {
	out := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		v, _ := dp.Attributes.Value("type")
		out[v.AsString()] += dp.Value
	}
	return out
}

func TestHistogramSeriesBecomeOneHistogram(t *testing.T) {
	p := newDemoProcessor(t)

	les := []string{"0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf"}
	s := newScrape(t0)
	// Series arrive in whatever order the receiver emits them; shuffle the
	// bucket order to prove the processor sorts by le, not by arrival.
	s.histogram(
		[]string{"+Inf", "0.1", "0.05", "1", "0.25", "2.5", "0.5"},
		[]float64{10, 3, 2, 7, 4, 9, 6}, 9.01, 10, "path", "/a")
	s.histogram(les, []float64{0, 0, 0, 0, 0, 0, 1}, 5, 1, "path", "/b")
	s.add("demo_temperature_celsius", 21.5, "room", "lab")
	out := p.process(t, s.md)

	for _, gone := range []string{"demo_request_duration_seconds_bucket", "demo_request_duration_seconds_sum", "demo_request_duration_seconds_count"} {
		if _, ok := metricsByName(out)[gone]; ok {
			t.Errorf("%s is still in the output after merging", gone)
		}
	}
	m := mustMetric(t, out, "demo_request_duration_seconds", pmetric.MetricTypeHistogram)
	if m.Histogram().AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
		t.Errorf("temporality %s, want cumulative", m.Histogram().AggregationTemporality())
	}
	if m.Description() != "Duration of demo requests." {
		t.Errorf("description %q", m.Description())
	}
	dps := m.Histogram().DataPoints()
	if dps.Len() != 2 {
		t.Fatalf("%d histogram points, want 2 (one per path)", dps.Len())
	}
	dp := dps.At(0)
	if path, _ := dp.Attributes().Get("path"); path.Str() != "/a" {
		dp = dps.At(1)
	}
	if _, ok := dp.Attributes().Get("le"); ok {
		t.Error("le is still an attribute of the histogram point")
	}
	if dp.Attributes().Len() != 1 {
		t.Errorf("attributes %v, want only path", dp.Attributes().AsRaw())
	}
	if got, want := dp.ExplicitBounds().AsRaw(), []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5}; !slices.Equal(got, want) {
		t.Errorf("bounds %v, want %v", got, want)
	}
	if got, want := dp.BucketCounts().AsRaw(), []uint64{2, 1, 1, 2, 1, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("bucket counts %v, want de-cumulated %v", got, want)
	}
	if dp.Count() != 10 || !dp.HasSum() || dp.Sum() != 9.01 {
		t.Errorf("count %d sum %v (has %v), want 10 and 9.01", dp.Count(), dp.Sum(), dp.HasSum())
	}
	if dp.Timestamp() != s.ts || dp.StartTimestamp() != s.ts {
		t.Errorf("timestamp %s start %s, want both %s on first sight", dp.Timestamp(), dp.StartTimestamp(), s.ts)
	}
	mustMetric(t, out, "demo_temperature_celsius", pmetric.MetricTypeGauge)

	// The next scrape with fewer observations is a reset of the histogram.
	s2 := newScrape(t0.Add(15 * time.Second))
	s2.histogram(les, []float64{1, 1, 1, 1, 1, 1, 1}, 0.01, 1, "path", "/a")
	dp2 := mustMetric(t, p.process(t, s2.md), "demo_request_duration_seconds", pmetric.MetricTypeHistogram).Histogram().DataPoints().At(0)
	if dp2.StartTimestamp() <= s.ts {
		t.Errorf("start %s did not advance after the count fell from 10 to 1", dp2.StartTimestamp())
	}
}

func TestHistogramWithoutInfBucketUsesCount(t *testing.T) {
	p := newDemoProcessor(t)
	s := newScrape(t0)
	s.histogram([]string{"1", "2"}, []float64{1, 3}, 4.5, 5)
	dp := mustMetric(t, p.process(t, s.md), "demo_request_duration_seconds", pmetric.MetricTypeHistogram).Histogram().DataPoints().At(0)
	if got, want := dp.BucketCounts().AsRaw(), []uint64{1, 2, 2}; !slices.Equal(got, want) {
		t.Errorf("bucket counts %v, want %v (overflow bucket from _count)", got, want)
	}
	if got := dp.ExplicitBounds().AsRaw(); !slices.Equal(got, []float64{1, 2}) {
		t.Errorf("bounds %v", got)
	}
}

// Series that cannot form a valid data point stay exactly as they came.
func TestInconsistentHistogramIsLeftAlone(t *testing.T) {
	p := newDemoProcessor(t)
	cases := map[string]func(s *scrape){
		"decreasing buckets": func(s *scrape) {
			s.histogram([]string{"1", "+Inf"}, []float64{5, 3}, 1, 3)
		},
		"count differs from +Inf": func(s *scrape) {
			s.histogram([]string{"1", "+Inf"}, []float64{1, 3}, 1, 4)
		},
		"no +Inf and no count": func(s *scrape) {
			s.add("demo_request_duration_seconds_bucket", 1, "le", "1")
			s.add("demo_request_duration_seconds_sum", 1)
		},
		"le not a number": func(s *scrape) {
			s.histogram([]string{"soon", "+Inf"}, []float64{1, 3}, 1, 3)
		},
		"negative count": func(s *scrape) {
			s.histogram([]string{"+Inf"}, []float64{-1}, 1, -1)
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			s := newScrape(t0)
			build(s)
			before := protoBytes(t, s.md)
			out := p.process(t, s.md)
			if !bytes.Equal(before, protoBytes(t, out)) {
				t.Errorf("output changed; now %v", names(out))
			}
		})
	}
}

// Only the complete group is merged; an incomplete one next to it stays.
func TestPartialGroupsStayAsGauges(t *testing.T) {
	p := newDemoProcessor(t)
	s := newScrape(t0)
	s.histogram([]string{"1", "+Inf"}, []float64{1, 3}, 1, 3, "path", "/ok")
	s.add("demo_request_duration_seconds_sum", 2, "path", "/broken")
	out := p.process(t, s.md)
	h := mustMetric(t, out, "demo_request_duration_seconds", pmetric.MetricTypeHistogram)
	if h.Histogram().DataPoints().Len() != 1 {
		t.Errorf("%d histogram points, want 1", h.Histogram().DataPoints().Len())
	}
	left := mustMetric(t, out, "demo_request_duration_seconds_sum", pmetric.MetricTypeGauge)
	if left.Gauge().DataPoints().Len() != 1 {
		t.Fatalf("%d gauge points left, want the 1 unmatched", left.Gauge().DataPoints().Len())
	}
	if v, _ := left.Gauge().DataPoints().At(0).Attributes().Get("path"); v.Str() != "/broken" {
		t.Errorf("wrong point left behind: %v", left.Gauge().DataPoints().At(0).Attributes().AsRaw())
	}
	if _, ok := metricsByName(out)["demo_request_duration_seconds_bucket"]; ok {
		t.Error("bucket gauge left although all its points were merged")
	}
}

func TestSummarySeriesBecomeOneSummary(t *testing.T) {
	p := newDemoProcessor(t)
	s := newScrape(t0)
	s.add("demo_response_size_bytes", 800, "quantile", "0.99")
	s.add("demo_response_size_bytes", 400, "quantile", "0.5")
	s.add("demo_response_size_bytes", 700, "quantile", "0.9")
	s.add("demo_response_size_bytes_sum", 3600)
	s.add("demo_response_size_bytes_count", 8)
	out := p.process(t, s.md)
	m := mustMetric(t, out, "demo_response_size_bytes", pmetric.MetricTypeSummary)
	if len(metricsByName(out)) != 1 {
		t.Errorf("output %v, want only the summary", names(out))
	}
	dp := m.Summary().DataPoints().At(0)
	if dp.Count() != 8 || dp.Sum() != 3600 || dp.StartTimestamp() != s.ts {
		t.Errorf("count %d sum %v start %s", dp.Count(), dp.Sum(), dp.StartTimestamp())
	}
	qs := dp.QuantileValues()
	if qs.Len() != 3 {
		t.Fatalf("%d quantiles, want 3", qs.Len())
	}
	for i, want := range [][2]float64{{0.5, 400}, {0.9, 700}, {0.99, 800}} {
		if qs.At(i).Quantile() != want[0] || qs.At(i).Value() != want[1] {
			t.Errorf("quantile %d = (%v, %v), want %v", i, qs.At(i).Quantile(), qs.At(i).Value(), want)
		}
	}
	if _, ok := dp.Attributes().Get("quantile"); ok {
		t.Error("quantile is still a point attribute")
	}
}

func TestGaugesUnknownAndRecordingRulesStay(t *testing.T) {
	p := newDemoProcessor(t)
	s := newScrape(t0)
	s.add("demo_temperature_celsius", 21.5, "room", "lab")
	s.add("job:demo_queue_depth:sum", 7, "job", "demo")
	s.add("up", 1)
	out := p.process(t, s.md)
	g := mustMetric(t, out, "demo_temperature_celsius", pmetric.MetricTypeGauge)
	if g.Description() != "Temperature of the demo room." {
		t.Errorf("gauge description %q not taken from metadata", g.Description())
	}
	for _, n := range []string{"job:demo_queue_depth:sum", "up"} {
		m := mustMetric(t, out, n, pmetric.MetricTypeGauge)
		if m.Description() != "" || m.Gauge().DataPoints().At(0).StartTimestamp() != 0 {
			t.Errorf("%s was touched", n)
		}
	}
}

func TestAmbiguousFamilyIsLeftAloneAndCounted(t *testing.T) {
	p := newDemoProcessor(t)
	s := newScrape(t0)
	s.add("shared_name", 5)
	before := protoBytes(t, s.md)
	out := p.process(t, s.md)
	if !bytes.Equal(before, protoBytes(t, out)) {
		t.Errorf("ambiguous family was changed: %v", names(out))
	}
	m, err := p.tel.GetMetric(metricAmbiguous)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Data.(metricdata.Gauge[int64]).DataPoints[0].Value; got != 1 {
		t.Errorf("%s = %d, want 1", metricAmbiguous, got)
	}
}

func TestStaleMarkersKeepStartAndForgetSeries(t *testing.T) {
	p := newDemoProcessor(t)
	s := newScrape(t0)
	s.add("demo_requests_total", 42)
	p.process(t, s.md)

	s2 := newScrape(t0.Add(time.Second))
	dp := s2.add("demo_requests_total", 0)
	dp.SetDoubleValue(math.Float64frombits(0x7ff0000000000002)) // Prometheus's stale NaN
	dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	out := mustMetric(t, p.process(t, s2.md), "demo_requests_total", pmetric.MetricTypeSum).Sum().DataPoints().At(0)
	if !out.Flags().NoRecordedValue() || out.StartTimestamp() != s.ts {
		t.Errorf("stale point flags %v start %s, want no-recorded-value and start %s", out.Flags(), out.StartTimestamp(), s.ts)
	}
	if p.cache.len() != 0 {
		t.Errorf("series still cached after its staleness marker")
	}
}

func TestThroughFactory(t *testing.T) {
	srv := newMetadataServer(t, demoMetadata)
	proc, sink := newFactoryProcessor(t, srv.URL)
	s := newScrape(time.Now())
	s.add("demo_requests_total", 1)
	if err := proc.ConsumeMetrics(context.Background(), s.md); err != nil {
		t.Fatal(err)
	}
	got := sink.AllMetrics()
	if len(got) != 1 {
		t.Fatalf("%d batches reached the next consumer", len(got))
	}
	mustMetric(t, got[0], "demo_requests_total", pmetric.MetricTypeSum)
}

// Batches from several receivers and the background refresh run at once; run
// with -race. Shutdown must stop the refresh goroutine.
func TestConcurrentBatchesAndRefresh(t *testing.T) {
	srv := newMetadataServer(t, demoMetadata)
	p := newTestProcessor(t, srv.URL, func(c *Config) { c.RefreshInterval = time.Second })
	deadline := time.Now().Add(2500 * time.Millisecond)
	done := make(chan struct{})
	for w := range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; time.Now().Before(deadline); i++ {
				s := newScrape(t0.Add(time.Duration(i) * time.Second))
				s.add("demo_requests_total", float64(i), "worker", strconv.Itoa(w))
				s.histogram([]string{"+Inf"}, []float64{float64(i)}, 1, float64(i))
				if _, err := p.processMetrics(context.Background(), s.md); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	<-done
	<-done
	srv.mu.Lock()
	hits := srv.hits
	srv.mu.Unlock()
	if hits < 2 {
		t.Errorf("metadata read %d times in 2.5s with refresh_interval 1s, want the start read plus refreshes", hits)
	}
	if err := p.shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	default:
		t.Error("refresh goroutine still running after shutdown")
	}
}
