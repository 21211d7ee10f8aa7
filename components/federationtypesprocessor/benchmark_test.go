// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// benchFederation builds one federation scrape of `targets` targets, each with
// the mix of a typical instrumented service: 20 counters and 10 gauges with 2
// label sets, 5 histograms of 11 buckets with 2 label sets, 2 summaries of 3
// quantiles. It returns the receiver-shaped pdata, the /federate text body that
// carries the same samples, and the metadata the server would answer.
func benchFederation(targets int) (pmetric.Metrics, []byte, *metadataSnapshot) {
	md := pmetric.NewMetrics()
	var text strings.Builder
	meta := &metadataSnapshot{families: map[string]familyMeta{}, fetched: t0}
	ts := pcommon.NewTimestampFromTime(t0)
	les := []string{"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"}
	for tg := range targets {
		instance := fmt.Sprintf("10.0.%d.%d:9100", tg/250, tg%250)
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("service.name", "app")
		rm.Resource().Attributes().PutStr("service.instance.id", instance)
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver")
		gs := newGauges(sm)
		add := func(name string, v float64, kv ...string) {
			dp := gs.point(name)
			dp.SetTimestamp(ts)
			dp.SetDoubleValue(v)
			fmt.Fprintf(&text, "%s{", name)
			for i := 0; i+1 < len(kv); i += 2 {
				dp.Attributes().PutStr(kv[i], kv[i+1])
				fmt.Fprintf(&text, "%s=%q,", kv[i], kv[i+1])
			}
			fmt.Fprintf(&text, "instance=%q,job=\"app\"} %g %d\n", instance, v, t0.UnixMilli())
		}
		for _, code := range []string{"200", "500"} {
			for i := range 20 {
				name := fmt.Sprintf("app_counter_%d_total", i)
				meta.families[name] = familyMeta{typ: model.MetricTypeCounter}
				add(name, 1000, "code", code)
			}
			for i := range 10 {
				name := fmt.Sprintf("app_gauge_%d", i)
				meta.families[name] = familyMeta{typ: model.MetricTypeGauge}
				add(name, 5, "code", code)
			}
			for i := range 5 {
				name := fmt.Sprintf("app_histogram_%d_seconds", i)
				meta.families[name] = familyMeta{typ: model.MetricTypeHistogram}
				for j, le := range les {
					add(name+"_bucket", float64(10*(j+1)), "code", code, "le", le)
				}
				add(name+"_sum", 42, "code", code)
				add(name+"_count", float64(10*len(les)), "code", code)
			}
		}
		for i := range 2 {
			name := fmt.Sprintf("app_summary_%d_bytes", i)
			meta.families[name] = familyMeta{typ: model.MetricTypeSummary}
			for _, q := range []string{"0.5", "0.9", "0.99"} {
				add(name, 100, "quantile", q)
			}
			add(name+"_sum", 4200)
			add(name+"_count", 42)
		}
	}
	return md, []byte(text.String()), meta
}

func benchProcessor(b *testing.B, meta *metadataSnapshot) *federationTypes {
	cfg := createDefaultConfig()
	cfg.Endpoint = "http://127.0.0.1:1"
	p, err := newFederationTypes(cfg, componenttest.NewNopTelemetrySettings())
	if err != nil {
		b.Fatal(err)
	}
	p.meta.Store(meta)
	return p
}

// BenchmarkProcess is the processor's cost per incoming data point on a
// steady-state federation scrape (every series already in the start-time cache).
func BenchmarkProcess(b *testing.B) {
	for _, targets := range []int{1, 50} {
		b.Run(fmt.Sprintf("targets=%d", targets), func(b *testing.B) {
			in, _, meta := benchFederation(targets)
			p := benchProcessor(b, meta)
			points := in.DataPointCount()
			work := pmetric.NewMetrics()
			in.CopyTo(work)
			if _, err := p.processMetrics(context.Background(), work); err != nil { // warm the cache
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				in.CopyTo(work)
				b.StartTimer()
				start := time.Now()
				if _, err := p.processMetrics(context.Background(), work); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*points), "ns/point")
		})
	}
}

// BenchmarkFederateParseFloor is the floor of the federation scrape that feeds
// the processor: parsing the same samples from the /federate text body and
// building gauge points from them, which the prometheus receiver does (and
// more: scrape loop, relabeling, staleness) for every point. The processor's
// ns/point is meant to be read against this one.
func BenchmarkFederateParseFloor(b *testing.B) {
	for _, targets := range []int{1, 50} {
		b.Run(fmt.Sprintf("targets=%d", targets), func(b *testing.B) {
			_, body, _ := benchFederation(targets)
			st := labels.NewSymbolTable()
			points := 0
			b.ReportAllocs()
			for b.Loop() {
				points = 0
				p := textparse.NewPromParser(body, st, false)
				md := pmetric.NewMetrics()
				gs := newGauges(md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty())
				var lset labels.Labels
				for {
					e, err := p.Next()
					if err != nil {
						break
					}
					if e != textparse.EntrySeries {
						continue
					}
					_, tsp, v := p.Series()
					p.Labels(&lset)
					dp := gs.point(lset.Get(model.MetricNameLabel))
					dp.SetDoubleValue(v)
					if tsp != nil {
						dp.SetTimestamp(pcommon.Timestamp(*tsp * int64(time.Millisecond)))
					}
					lset.Range(func(l labels.Label) {
						if l.Name != model.MetricNameLabel {
							dp.Attributes().PutStr(l.Name, l.Value)
						}
					})
					points++
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*points), "ns/point")
		})
	}
}
