// SPDX-License-Identifier: Apache-2.0

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
	listed     map[string]bool
	tel        *metadata.TelemetryBuilder
	// One attribute set per (attribute, outcome), built once: the hot path
	// allocates nothing for telemetry.
	replaced, dropped map[string]metric.AddOption
}

func newPodIdentity(c *Config, set component.TelemetrySettings) (*podIdentity, error) {
	p := &podIdentity{mode: c.Mode, attributes: c.Attributes, listed: map[string]bool{}, replaced: map[string]metric.AddOption{}, dropped: map[string]metric.AddOption{}}
	for _, a := range c.Attributes {
		p.listed[a] = true
	}
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

// processResource sets the resource's claims aside or verifies them, and says
// whether the records' own attributes are to be checked too: only the verifying
// instance does, since only it runs after k8s_attributes.
func (p *podIdentity) processResource(ctx context.Context, attrs pcommon.Map) (checkRecords bool) {
	if p.mode == ModeSetAside {
		p.setAside(attrs)
		return false
	}
	p.verify(ctx, attrs)
	return true
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
		p.count(ctx, a, claimed, attrs)
		attrs.Remove(claimPrefix + a)
	}
	// Claims of attributes this instance does not list (a set_aside partner with
	// a longer list) must not travel on either.
	attrs.RemoveIf(isClaim)
}

// count records claim's outcome against what attrs (the resource, after
// k8s_attributes) holds for attribute a: nothing to confirm it, or another
// value. An honest claim is not counted.
func (p *podIdentity) count(ctx context.Context, a string, claimed pcommon.Value, attrs pcommon.Map) {
	actual, known := attrs.Get(a)
	switch {
	case !known:
		p.tel.ProcessorPodIdentityClaimsOverwritten.Add(ctx, 1, p.dropped[a])
	case actual.AsString() != claimed.AsString():
		p.tel.ProcessorPodIdentityClaimsOverwritten.Add(ctx, 1, p.replaced[a])
	}
}

func isClaim(k string, _ pcommon.Value) bool {
	return len(k) > len(claimPrefix) && k[:len(claimPrefix)] == claimPrefix
}

func (p *podIdentity) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	for _, rl := range ld.ResourceLogs().All() {
		res := rl.Resource().Attributes()
		if !p.processResource(ctx, res) {
			continue
		}
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				p.removeRecordClaims(ctx, res, lr.Attributes())
			}
		}
	}
	return ld, nil
}

// processMetrics leaves data point attributes alone: they are dimensions, and
// a metric about other pods (kube-state-metrics' kind) names them there;
// removing them would merge those pods' series into one.
func (p *podIdentity) processMetrics(ctx context.Context, md pmetric.Metrics) (pmetric.Metrics, error) {
	for _, rm := range md.ResourceMetrics().All() {
		p.processResource(ctx, rm.Resource().Attributes())
	}
	return md, nil
}

func (p *podIdentity) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	for _, rs := range td.ResourceSpans().All() {
		res := rs.Resource().Attributes()
		if !p.processResource(ctx, res) {
			continue
		}
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				p.removeRecordClaims(ctx, res, span.Attributes())
				for _, e := range span.Events().All() {
					p.removeRecordClaims(ctx, res, e.Attributes())
				}
				for _, l := range span.Links().All() {
					p.removeRecordClaims(ctx, res, l.Attributes())
				}
			}
		}
	}
	return td, nil
}
