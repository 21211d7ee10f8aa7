package podidentityprocessor

import (
	"context"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// removeRecordClaims removes the listed attributes from a record's (log
// record's, span's, data point's) attributes. They are the client's word as
// much as the resource's are: the gateway lifts log record attributes into
// the resource, and backends read record attributes beside the resource's.
// The resource already holds what the connection decided, so nothing is lost;
// a value that disagrees with it, or that no pod confirmed, is counted as a
// resource claim is.
func (p *podIdentity) removeRecordClaims(ctx context.Context, res, attrs pcommon.Map) {
	attrs.RemoveIf(func(k string, claimed pcommon.Value) bool {
		if !p.listed[k] {
			return false
		}
		p.count(ctx, k, claimed, res)
		return true
	})
}

func (p *podIdentity) removeDataPointClaims(ctx context.Context, res pcommon.Map, m pmetric.Metric) {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		for i := 0; i < m.Gauge().DataPoints().Len(); i++ {
			p.removeRecordClaims(ctx, res, m.Gauge().DataPoints().At(i).Attributes())
		}
	case pmetric.MetricTypeSum:
		for i := 0; i < m.Sum().DataPoints().Len(); i++ {
			p.removeRecordClaims(ctx, res, m.Sum().DataPoints().At(i).Attributes())
		}
	case pmetric.MetricTypeHistogram:
		for i := 0; i < m.Histogram().DataPoints().Len(); i++ {
			p.removeRecordClaims(ctx, res, m.Histogram().DataPoints().At(i).Attributes())
		}
	case pmetric.MetricTypeExponentialHistogram:
		for i := 0; i < m.ExponentialHistogram().DataPoints().Len(); i++ {
			p.removeRecordClaims(ctx, res, m.ExponentialHistogram().DataPoints().At(i).Attributes())
		}
	case pmetric.MetricTypeSummary:
		for i := 0; i < m.Summary().DataPoints().Len(); i++ {
			p.removeRecordClaims(ctx, res, m.Summary().DataPoints().At(i).Attributes())
		}
	}
}
