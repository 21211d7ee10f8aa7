// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

// What the federation tests read back: the series the sink received, and the
// relay's own metrics.

import (
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/promtext"
)

// found is one metric as the sink received it, with its resource.
type found struct {
	metric   pmetric.Metric
	resource pcommon.Resource
}

// latest returns the most recently received metric called name whose points
// match the attribute filter (nil matches all).
func latest(s *otlpfixture.Sink, name string) (found, bool) {
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
func waitMetric(t *testing.T, s *otlpfixture.Sink, name string, typ pmetric.MetricType, timeout time.Duration) found {
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
