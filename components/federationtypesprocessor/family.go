// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"math"
	"strconv"

	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
)

// member is one gauge metric that is part of a histogram or summary family.
type member struct {
	idx  int
	role role
}

type familyAcc struct {
	name    string
	meta    familyMeta
	members []member
}

type pointRef struct {
	member int // index into familyAcc.members
	point  int
}

// group collects the series of one histogram or summary data point: same
// attributes (apart from le/quantile) and same timestamp, so they come from one
// scrape of one target.
type group struct {
	ts        pcommon.Timestamp
	attrHash  seriesKey
	attrsFrom pmetric.NumberDataPoint
	refs      []pointRef
	buckets   []bucket
	quantiles []quantile
	sum       float64
	count     float64
	hasSum    bool
	hasCount  bool
	stale     int
	bad       string // why the group cannot be converted, or ""
}

type groupKey struct {
	attrs seriesKey
	ts    pcommon.Timestamp
}

// assembler merges one histogram or summary family of one scope. It carries
// what all the family's points share.
type assembler struct {
	*batch
	ms   pmetric.MetricSlice
	f    *familyAcc
	base seriesKey // the scope's series key
	excl string    // the label that tells the family's series apart: le or quantile
	// consumed marks, per member, the gauge points that went into a point.
	consumed [][]bool
}

// mergeFamily replaces the _bucket/_sum/_count (or quantile/_sum/_count) gauges
// of one family by one Histogram (or Summary) metric. Points that do not form a
// complete, consistent data point stay where they were, as gauges: the
// processor never invents or drops data. It reports whether anything was
// converted and marks member metrics it emptied.
func (b *batch) mergeFamily(ms pmetric.MetricSlice, f *familyAcc, base seriesKey, emptied []bool) bool {
	a := &assembler{batch: b, ms: ms, f: f, base: base, excl: "le"}
	histogram := f.meta.typ == model.MetricTypeHistogram
	if !histogram {
		a.excl = "quantile"
	}
	out := pmetric.NewMetric()
	out.SetName(f.name)
	describe(out, f.meta)
	var hdps pmetric.HistogramDataPointSlice
	var sdps pmetric.SummaryDataPointSlice
	if histogram {
		h := out.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		hdps = h.DataPoints()
	} else {
		sdps = out.SetEmptySummary().DataPoints()
	}
	converted := 0
	var buf [8]*group // most families have few points per scope: no allocation
	for _, g := range a.groups(buf[:0]) {
		var ok bool
		if histogram {
			ok = a.histogramPoint(hdps, g)
		} else {
			ok = a.summaryPoint(sdps, g)
		}
		if ok {
			a.consume(g)
			converted++
		} else if a.logger.Core().Enabled(zap.DebugLevel) {
			a.logger.Debug("Series left as gauges: they do not form one data point",
				zap.String("family", f.name), zap.String("type", string(f.meta.typ)), zap.String("reason", g.bad))
		}
	}
	if converted == 0 {
		return false
	}
	a.removeConsumed(emptied)
	out.MoveTo(ms.AppendEmpty())
	return true
}

// groups sorts the points of the family's gauges into data points and appends
// them to order, in the order they were first seen.
func (a *assembler) groups(order []*group) []*group {
	groups := make(map[groupKey]*group)
	for mi, mem := range a.f.members {
		dps := a.ms.At(mem.idx).Gauge().DataPoints()
		for pi := range dps.Len() {
			dp := dps.At(pi)
			ah := a.keys.attrs(dp.Attributes(), a.excl)
			k := groupKey{attrs: ah, ts: dp.Timestamp()}
			g := groups[k]
			if g == nil {
				g = &group{ts: dp.Timestamp(), attrHash: ah, attrsFrom: dp}
				groups[k] = g
				order = append(order, g)
			}
			g.refs = append(g.refs, pointRef{member: mi, point: pi})
			if dp.Flags().NoRecordedValue() {
				g.stale++
			}
			g.add(mem.role, dp)
		}
	}
	return order
}

// add records the value of one of the group's series.
func (g *group) add(r role, dp pmetric.NumberDataPoint) {
	v := numberValue(dp)
	switch r {
	case roleBucket:
		le, ok := floatAttr(dp.Attributes(), "le")
		if !ok {
			g.bad = "bucket without a numeric le"
			return
		}
		g.buckets = append(g.buckets, bucket{le: le, cum: v})
	case roleQuantile:
		q, ok := floatAttr(dp.Attributes(), "quantile")
		if !ok || q < 0 || q > 1 {
			g.bad = "quantile series without a quantile in [0,1]"
			return
		}
		g.quantiles = append(g.quantiles, quantile{q: q, v: v})
	case roleSum:
		if g.hasSum {
			g.bad = "two _sum samples"
		}
		g.sum, g.hasSum = v, true
	case roleCount:
		if g.hasCount {
			g.bad = "two _count samples"
		}
		g.count, g.hasCount = v, true
	}
}

// consume marks the gauge points that g was made of.
func (a *assembler) consume(g *group) {
	if a.consumed == nil {
		a.consumed = make([][]bool, len(a.f.members))
	}
	for _, r := range g.refs {
		if a.consumed[r.member] == nil {
			a.consumed[r.member] = make([]bool, a.ms.At(a.f.members[r.member].idx).Gauge().DataPoints().Len())
		}
		a.consumed[r.member][r.point] = true
	}
}

// removeConsumed removes the consumed gauge points, and marks the member
// metrics left without points.
func (a *assembler) removeConsumed(emptied []bool) {
	for mi, c := range a.consumed {
		if c == nil {
			continue
		}
		dps := a.ms.At(a.f.members[mi].idx).Gauge().DataPoints()
		i := 0
		dps.RemoveIf(func(pmetric.NumberDataPoint) bool {
			drop := c[i]
			i++
			return drop
		})
		if dps.Len() == 0 {
			emptied[a.f.members[mi].idx] = true
		}
	}
}

func floatAttr(m pcommon.Map, key string) (float64, bool) {
	v, ok := m.Get(key)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.AsString(), 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}
