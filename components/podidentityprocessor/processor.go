package podidentityprocessor

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-relay/otelcol-relay/components/podidentityprocessor/internal/metadata"
)

type podIdentity struct {
	mode       Mode
	attributes []string
	tel        *metadata.TelemetryBuilder
	// One attribute set per (attribute, outcome), built once: the hot path
	// allocates nothing for telemetry.
	replaced, dropped map[string]metric.AddOption
}

func newPodIdentity(c *Config, set component.TelemetrySettings) (*podIdentity, error) {
	p := &podIdentity{mode: c.Mode, attributes: c.Attributes, replaced: map[string]metric.AddOption{}, dropped: map[string]metric.AddOption{}}
	if c.Mode != ModeVerify {
		return p, nil
	}
	var err error
	if p.tel, err = metadata.NewTelemetryBuilder(set); err != nil {
		return nil, errors.Join(errors.New("pod_identity: telemetry"), err)
	}
	for _, a := range c.Attributes {
		p.replaced[a] = metric.WithAttributeSet(attribute.NewSet(attribute.String("attribute", a), attribute.String("outcome", "replaced")))
		p.dropped[a] = metric.WithAttributeSet(attribute.NewSet(attribute.String("attribute", a), attribute.String("outcome", "dropped")))
	}
	return p, nil
}

func (p *podIdentity) processResource(ctx context.Context, attrs pcommon.Map) {
	if p.mode == ModeSetAside {
		p.setAside(attrs)
		return
	}
	p.verify(ctx, attrs)
}

// setAside moves each claimed identity attribute under claimPrefix.
func (p *podIdentity) setAside(attrs pcommon.Map) {
	attrs.RemoveIf(isClaim)
	for _, a := range p.attributes {
		v, ok := attrs.Get(a)
		if !ok {
			continue
		}
		v.CopyTo(attrs.PutEmpty(claimPrefix + a))
		attrs.Remove(a)
	}
}

// verify compares each claim set aside with what k8s_attributes wrote from the
// connection's pod, counts the ones that disagree and removes every claim.
func (p *podIdentity) verify(ctx context.Context, attrs pcommon.Map) {
	for _, a := range p.attributes {
		claimed, ok := attrs.Get(claimPrefix + a)
		if !ok {
			continue
		}
		actual, known := attrs.Get(a)
		switch {
		case !known:
			p.tel.ProcessorPodIdentityClaimsOverwritten.Add(ctx, 1, p.dropped[a])
		case actual.AsString() != claimed.AsString():
			p.tel.ProcessorPodIdentityClaimsOverwritten.Add(ctx, 1, p.replaced[a])
		}
		attrs.Remove(claimPrefix + a)
	}
	// Claims of attributes this instance does not list (a set_aside partner with
	// a longer list) must not travel on either.
	attrs.RemoveIf(isClaim)
}

func isClaim(k string, _ pcommon.Value) bool {
	return len(k) > len(claimPrefix) && k[:len(claimPrefix)] == claimPrefix
}

func (p *podIdentity) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		p.processResource(ctx, rls.At(i).Resource().Attributes())
	}
	return ld, nil
}

func (p *podIdentity) processMetrics(ctx context.Context, md pmetric.Metrics) (pmetric.Metrics, error) {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		p.processResource(ctx, rms.At(i).Resource().Attributes())
	}
	return md, nil
}

func (p *podIdentity) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		p.processResource(ctx, rss.At(i).Resource().Attributes())
	}
	return td, nil
}
