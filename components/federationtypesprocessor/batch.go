// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"context"
	"time"

	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
)

// batch is the work on one pmetric.Metrics. Batches from several receivers may
// run concurrently: each hashes with its own hashers, and only the series
// cache, which they share, takes a lock.
type batch struct {
	snap   *metadataSnapshot
	cache  *seriesCache
	keys   keyHasher
	logger *zap.Logger
	now    time.Time
	stats  retypeStats
}

type retypeStats struct {
	counters, histograms, summaries int64
}

func (p *federationTypes) processMetrics(ctx context.Context, md pmetric.Metrics) (pmetric.Metrics, error) {
	snap := p.meta.Load()
	if snap == nil {
		return md, nil
	}
	b := &batch{snap: snap, cache: p.cache, logger: p.logger, now: p.now()}
	b.keys.seed(p.seeds)
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		resHash := b.keys.attrs(rm.Resource().Attributes(), "")
		sms := rm.ScopeMetrics()
		for j := range sms.Len() {
			sm := sms.At(j)
			b.retypeScope(sm.Metrics(), b.keys.scope(resHash, sm.Scope()))
		}
	}
	p.cache.expire(b.now)
	p.tel.recordRetyped(ctx, b.stats.counters, b.stats.histograms, b.stats.summaries)
	return md, nil
}

// retypeScope retypes the gauges of one scope: counters in place, and the
// series of each histogram or summary family merged into one metric.
func (b *batch) retypeScope(ms pmetric.MetricSlice, base seriesKey) {
	n := ms.Len()
	var fams map[string]*familyAcc
	var order []*familyAcc
	for i := range n {
		m := ms.At(i)
		if m.Type() != pmetric.MetricTypeGauge {
			continue
		}
		r, fam, meta := b.snap.lookup(m.Name())
		switch r {
		case roleNone, roleAmbiguous:
		case roleGauge:
			describe(m, meta)
		case roleCounter:
			b.toSum(m, meta, base)
			b.stats.counters++
		default:
			if fams == nil {
				fams = make(map[string]*familyAcc)
			}
			f := fams[fam]
			if f == nil {
				f = &familyAcc{name: fam, meta: meta}
				fams[fam] = f
				order = append(order, f)
			}
			f.members = append(f.members, member{idx: i, role: r})
		}
	}
	if len(order) == 0 {
		return
	}
	emptied := make([]bool, n)
	for _, f := range order {
		if b.mergeFamily(ms, f, base, emptied) {
			if f.meta.typ == model.MetricTypeHistogram {
				b.stats.histograms++
			} else {
				b.stats.summaries++
			}
		}
	}
	idx := 0
	ms.RemoveIf(func(pmetric.Metric) bool {
		i := idx
		idx++
		return i < n && emptied[i]
	})
}

// describe fills in what federation dropped, without overwriting anything a
// pipeline stage before us set.
func describe(m pmetric.Metric, meta familyMeta) {
	if m.Description() == "" && meta.help != "" {
		m.SetDescription(meta.help)
	}
	if m.Unit() == "" && meta.unit != "" {
		m.SetUnit(meta.unit)
	}
}

func numberValue(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}

// toSum turns a counter's gauge into a monotonic cumulative Sum in place and
// gives every point its series' start time.
func (b *batch) toSum(m pmetric.Metric, meta familyMeta, base seriesKey) {
	points := pmetric.NewNumberDataPointSlice()
	m.Gauge().DataPoints().MoveAndAppendTo(points)
	sum := m.SetEmptySum()
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	sum.SetIsMonotonic(true)
	points.MoveAndAppendTo(sum.DataPoints())
	describe(m, meta)
	dps := sum.DataPoints()
	for i := range dps.Len() {
		dp := dps.At(i)
		key := b.keys.series(base, m.Name(), b.keys.attrs(dp.Attributes(), ""))
		if dp.Flags().NoRecordedValue() {
			if start, ok := b.cache.end(key); ok {
				dp.SetStartTimestamp(start)
			}
			continue
		}
		dp.SetStartTimestamp(b.cache.observe(key, dp.Timestamp(), numberValue(dp), b.now))
	}
}
