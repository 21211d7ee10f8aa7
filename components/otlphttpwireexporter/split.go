// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// The split helpers copy a range of items into a new message, keeping each
// item's resource and scope; the decoded chunk itself is left as it is, so a
// piece that turns out too big (bytes sizer) is simply encoded again smaller.
// Resources and scopes without any item are not carried into pieces.

type logsDecoded struct {
	ld plog.Logs
	n  int
}

func (d logsDecoded) items() int      { return d.ld.LogRecordCount() }
func (d logsDecoded) encodedLen() int { return d.n }

func (d logsDecoded) encodeRange(from, to int) ([]byte, error) {
	out := plog.NewLogs()
	i := 0
	for _, rl := range d.ld.ResourceLogs().All() {
		var drl plog.ResourceLogs
		hasRL := false
		for _, sl := range rl.ScopeLogs().All() {
			n := sl.LogRecords().Len()
			if i+n <= from || i >= to {
				i += n
				continue
			}
			if !hasRL {
				drl = out.ResourceLogs().AppendEmpty()
				rl.Resource().CopyTo(drl.Resource())
				drl.SetSchemaUrl(rl.SchemaUrl())
				hasRL = true
			}
			dsl := drl.ScopeLogs().AppendEmpty()
			sl.Scope().CopyTo(dsl.Scope())
			dsl.SetSchemaUrl(sl.SchemaUrl())
			for j := max(0, from-i); j < n && i+j < to; j++ {
				sl.LogRecords().At(j).CopyTo(dsl.LogRecords().AppendEmpty())
			}
			i += n
		}
	}
	return plogotlp.NewExportRequestFromLogs(out).MarshalProto()
}

type tracesDecoded struct {
	td ptrace.Traces
	n  int
}

func (d tracesDecoded) items() int      { return d.td.SpanCount() }
func (d tracesDecoded) encodedLen() int { return d.n }

func (d tracesDecoded) encodeRange(from, to int) ([]byte, error) {
	out := ptrace.NewTraces()
	i := 0
	for _, rs := range d.td.ResourceSpans().All() {
		var drs ptrace.ResourceSpans
		hasRS := false
		for _, ss := range rs.ScopeSpans().All() {
			n := ss.Spans().Len()
			if i+n <= from || i >= to {
				i += n
				continue
			}
			if !hasRS {
				drs = out.ResourceSpans().AppendEmpty()
				rs.Resource().CopyTo(drs.Resource())
				drs.SetSchemaUrl(rs.SchemaUrl())
				hasRS = true
			}
			dss := drs.ScopeSpans().AppendEmpty()
			ss.Scope().CopyTo(dss.Scope())
			dss.SetSchemaUrl(ss.SchemaUrl())
			for j := max(0, from-i); j < n && i+j < to; j++ {
				ss.Spans().At(j).CopyTo(dss.Spans().AppendEmpty())
			}
			i += n
		}
	}
	return ptraceotlp.NewExportRequestFromTraces(out).MarshalProto()
}

// Metrics are split by data point: a metric whose points straddle a limit
// appears in both pieces with its name, unit, type and temporality.
type metricsDecoded struct {
	md pmetric.Metrics
	n  int
}

func (d metricsDecoded) items() int      { return d.md.DataPointCount() }
func (d metricsDecoded) encodedLen() int { return d.n }

func (d metricsDecoded) encodeRange(from, to int) ([]byte, error) {
	out := pmetric.NewMetrics()
	i := 0
	for _, rm := range d.md.ResourceMetrics().All() {
		var drm pmetric.ResourceMetrics
		hasRM := false
		for _, sm := range rm.ScopeMetrics().All() {
			var dsm pmetric.ScopeMetrics
			hasSM := false
			for _, m := range sm.Metrics().All() {
				n := dataPointLen(m)
				if i+n <= from || i >= to {
					i += n
					continue
				}
				if !hasRM {
					drm = out.ResourceMetrics().AppendEmpty()
					rm.Resource().CopyTo(drm.Resource())
					drm.SetSchemaUrl(rm.SchemaUrl())
					hasRM = true
				}
				if !hasSM {
					dsm = drm.ScopeMetrics().AppendEmpty()
					sm.Scope().CopyTo(dsm.Scope())
					dsm.SetSchemaUrl(sm.SchemaUrl())
					hasSM = true
				}
				copyPoints(m, dsm.Metrics().AppendEmpty(), max(0, from-i), min(n, to-i))
				i += n
			}
		}
	}
	return pmetricotlp.NewExportRequestFromMetrics(out).MarshalProto()
}

func dataPointLen(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		return m.Summary().DataPoints().Len()
	}
	return 0
}

// copyPoints copies m without its data points, then its points [from, to).
func copyPoints(m, dst pmetric.Metric, from, to int) {
	dst.SetName(m.Name())
	dst.SetDescription(m.Description())
	dst.SetUnit(m.Unit())
	m.Metadata().CopyTo(dst.Metadata())
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		src, d := m.Gauge().DataPoints(), dst.SetEmptyGauge().DataPoints()
		for j := from; j < to; j++ {
			src.At(j).CopyTo(d.AppendEmpty())
		}
	case pmetric.MetricTypeSum:
		s := dst.SetEmptySum()
		s.SetAggregationTemporality(m.Sum().AggregationTemporality())
		s.SetIsMonotonic(m.Sum().IsMonotonic())
		src := m.Sum().DataPoints()
		for j := from; j < to; j++ {
			src.At(j).CopyTo(s.DataPoints().AppendEmpty())
		}
	case pmetric.MetricTypeHistogram:
		h := dst.SetEmptyHistogram()
		h.SetAggregationTemporality(m.Histogram().AggregationTemporality())
		src := m.Histogram().DataPoints()
		for j := from; j < to; j++ {
			src.At(j).CopyTo(h.DataPoints().AppendEmpty())
		}
	case pmetric.MetricTypeExponentialHistogram:
		h := dst.SetEmptyExponentialHistogram()
		h.SetAggregationTemporality(m.ExponentialHistogram().AggregationTemporality())
		src := m.ExponentialHistogram().DataPoints()
		for j := from; j < to; j++ {
			src.At(j).CopyTo(h.DataPoints().AppendEmpty())
		}
	case pmetric.MetricTypeSummary:
		src, d := m.Summary().DataPoints(), dst.SetEmptySummary().DataPoints()
		for j := from; j < to; j++ {
			src.At(j).CopyTo(d.AppendEmpty())
		}
	}
}
