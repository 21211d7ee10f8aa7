// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"math"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

type bucket struct {
	le  float64
	cum float64
}

type quantile struct {
	q, v float64
}

// histogramPoint de-cumulates the buckets of g into a Histogram point.
func (a *assembler) histogramPoint(dps pmetric.HistogramDataPointSlice, g *group) bool {
	if !g.whole() {
		return false
	}
	if !sortDistinct(g.buckets, func(b bucket) float64 { return b.le }) {
		g.bad = "two buckets with the same le"
		return false
	}
	hasInf := len(g.buckets) > 0 && math.IsInf(g.buckets[len(g.buckets)-1].le, 1)
	bounds := make([]float64, 0, len(g.buckets))
	for _, b := range g.buckets {
		if !math.IsInf(b.le, 1) {
			bounds = append(bounds, b.le)
		}
	}
	if g.stale > 0 {
		dp := dps.AppendEmpty()
		stampStale(a, dp, g)
		dp.ExplicitBounds().FromRaw(bounds)
		dp.BucketCounts().FromRaw(make([]uint64, len(bounds)+1))
		return true
	}
	if !hasInf && !g.hasCount {
		g.bad = "neither a +Inf bucket nor a _count"
		return false
	}
	cums := make([]float64, 0, len(bounds)+1)
	for _, b := range g.buckets {
		cums = append(cums, b.cum)
	}
	if !hasInf {
		cums = append(cums, g.count)
	}
	counts := make([]uint64, len(cums))
	var prev uint64
	for i, c := range cums {
		if math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			g.bad = "a bucket count that is not a finite non-negative number"
			return false
		}
		r := uint64(math.Round(c))
		if r < prev {
			g.bad = "bucket counts that decrease with le"
			return false
		}
		counts[i] = r - prev
		prev = r
	}
	if g.hasCount && hasInf && math.Round(g.count) != float64(prev) {
		g.bad = "_count differs from the +Inf bucket"
		return false
	}
	dp := dps.AppendEmpty()
	stampSample(a, dp, g, prev)
	dp.SetCount(prev)
	if g.hasSum {
		dp.SetSum(g.sum)
	}
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	for _, r := range g.refs {
		src := a.ms.At(a.f.members[r.member].idx).Gauge().DataPoints().At(r.point)
		if src.Exemplars().Len() > 0 {
			src.Exemplars().MoveAndAppendTo(dp.Exemplars())
		}
	}
	return true
}

// summaryPoint turns the quantile, _sum and _count series of g into a Summary
// point.
func (a *assembler) summaryPoint(dps pmetric.SummaryDataPointSlice, g *group) bool {
	if !g.whole() {
		return false
	}
	if g.stale > 0 {
		stampStale(a, dps.AppendEmpty(), g)
		return true
	}
	if !g.hasCount || !g.hasSum {
		g.bad = "a summary needs both _sum and _count"
		return false
	}
	if math.IsNaN(g.count) || math.IsInf(g.count, 0) || g.count < 0 {
		g.bad = "_count is not a finite non-negative number"
		return false
	}
	if !sortDistinct(g.quantiles, func(q quantile) float64 { return q.q }) {
		g.bad = "two series with the same quantile"
		return false
	}
	count := uint64(math.Round(g.count))
	dp := dps.AppendEmpty()
	stampSample(a, dp, g, count)
	dp.SetCount(count)
	dp.SetSum(g.sum)
	qs := dp.QuantileValues()
	qs.EnsureCapacity(len(g.quantiles))
	for _, q := range g.quantiles {
		qv := qs.AppendEmpty()
		qv.SetQuantile(q.q)
		qv.SetValue(q.v)
	}
	return true
}

// whole reports whether nothing already rules g out, and either all of its
// series are stale or none is: a marker for part of a point would leave a
// point with made-up values.
func (g *group) whole() bool {
	if g.bad != "" {
		return false
	}
	if g.stale > 0 && g.stale < len(g.refs) {
		g.bad = "some series of the data point are stale and some not"
		return false
	}
	return true
}

// dataPoint is what Histogram and Summary points share.
type dataPoint interface {
	SetTimestamp(pcommon.Timestamp)
	SetStartTimestamp(pcommon.Timestamp)
	SetFlags(pmetric.DataPointFlags)
	Attributes() pcommon.Map
}

// stampSample gives dp the group's timestamp and attributes, and the start time
// of its series, which sees a sample of count.
func stampSample[P dataPoint](a *assembler, dp P, g *group, count uint64) {
	dp.SetTimestamp(g.ts)
	dp.SetStartTimestamp(a.cache.observe(a.seriesOf(g), g.ts, float64(count), a.now))
	copyAttrsExcept(g.attrsFrom.Attributes(), dp.Attributes(), a.excl)
}

// stampStale makes dp the staleness marker of the group's series, which ends
// it: if it comes back, it is a new series with a new start.
func stampStale[P dataPoint](a *assembler, dp P, g *group) {
	dp.SetTimestamp(g.ts)
	if start, ok := a.cache.end(a.seriesOf(g)); ok {
		dp.SetStartTimestamp(start)
	}
	dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	copyAttrsExcept(g.attrsFrom.Attributes(), dp.Attributes(), a.excl)
}

func (a *assembler) seriesOf(g *group) seriesKey {
	return a.keys.series(a.base, a.f.name, g.attrHash)
}

func copyAttrsExcept(from, to pcommon.Map, excl string) {
	to.EnsureCapacity(from.Len())
	from.Range(func(k string, v pcommon.Value) bool {
		if k != excl {
			v.CopyTo(to.PutEmpty(k))
		}
		return true
	})
}

// sortDistinct sorts xs by key and reports whether no two keys are equal: the
// bounds of a histogram and the quantiles of a summary must each be distinct.
func sortDistinct[T any](xs []T, key func(T) float64) bool {
	slices.SortFunc(xs, func(a, b T) int {
		switch ka, kb := key(a), key(b); {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	for i := 1; i < len(xs); i++ {
		if key(xs[i]) == key(xs[i-1]) {
			return false
		}
	}
	return true
}
