// SPDX-License-Identifier: Apache-2.0

package podidentityprocessor

import (
	"context"
	"maps"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// victim is what a client writes on its records to pass them off as another
// pod's: the gateway lifts record attributes of logs into the resource, and
// backends show span attributes next to the resource's.
var victim = map[string]any{
	"k8s.pod.uid": "uid-victim", "k8s.pod.name": "vault-0", "k8s.namespace.name": "secrets",
	"container.id": "containerd://victim", "http.route": "/pay",
}

// TestLogRecordClaimsAreRemoved: identity on a log record is the client's word
// too; it must not leave the agent, whatever the resource says.
func TestLogRecordClaimsAreRemoved(t *testing.T) {
	c := newChain(t, ownPod)
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	if err := lrs.AppendEmpty().Attributes().FromRaw(victim); err != nil {
		t.Fatal(err)
	}
	// An honest copy of the pod's own name is removed too (the resource has it)
	// but not counted.
	lrs.AppendEmpty().Attributes().PutStr("k8s.pod.name", "checkout-1")
	if err := c.in.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	out := c.sink.AllLogs()[0].ResourceLogs().At(0)
	got := out.ScopeLogs().At(0).LogRecords()
	if a := got.At(0).Attributes().AsRaw(); !maps.Equal(a, map[string]any{"http.route": "/pay"}) {
		t.Errorf("record attributes after the agent: %v, want only http.route", a)
	}
	if a := got.At(1).Attributes().AsRaw(); len(a) != 0 {
		t.Errorf("record attributes after the agent: %v, want none", a)
	}
	if uid, _ := out.Resource().Attributes().Get("k8s.pod.uid"); uid.Str() != "uid-own" {
		t.Errorf("resource k8s.pod.uid = %q, want uid-own", uid.Str())
	}
	want := map[string]int64{"k8s.pod.uid/replaced": 1, "k8s.pod.name/replaced": 1, "k8s.namespace.name/replaced": 1, "container.id/dropped": 1}
	if n := c.counts(t); !maps.Equal(n, want) {
		t.Errorf("counter %s = %v, want %v", metricOverwritten, n, want)
	}
}

// TestSpanClaimsAreRemoved: the same for spans, their events and links.
func TestSpanClaimsAreRemoved(t *testing.T) {
	p, err := newPodIdentity(&Config{Mode: ModeVerify, Attributes: defaultAttributes}, newChain(t, nil).tel.NewTelemetrySettings())
	if err != nil {
		t.Fatal(err)
	}
	fill := func(m pcommon.Map) {
		if err := m.FromRaw(victim); err != nil {
			t.Fatal(err)
		}
	}
	td := ptrace.NewTraces()
	span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	fill(span.Attributes())
	fill(span.Events().AppendEmpty().Attributes())
	fill(span.Links().AppendEmpty().Attributes())
	if _, err := p.processTraces(context.Background(), td); err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]pcommon.Map{"span": span.Attributes(), "span event": span.Events().At(0).Attributes(), "span link": span.Links().At(0).Attributes()} {
		if a := m.AsRaw(); !maps.Equal(a, map[string]any{"http.route": "/pay"}) {
			t.Errorf("%s attributes after the agent: %v", name, a)
		}
	}

	// Data point attributes are dimensions: a metric about other pods names
	// them there, and removing them would merge their series.
	md := pmetric.NewMetrics()
	dp := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptyGauge().DataPoints().AppendEmpty()
	fill(dp.Attributes())
	if _, err := p.processMetrics(context.Background(), md); err != nil {
		t.Fatal(err)
	}
	if a := dp.Attributes().AsRaw(); !maps.Equal(a, victim) {
		t.Errorf("data point attributes after the agent: %v, want them as sent", a)
	}
}

// TestContainerIDIsIdentity: container.id names one container in the cluster
// (kubelet_stats' container metrics carry it), so a client's value is set aside
// like the pod's; only k8s_attributes' value, from the connection's pod, stays.
func TestContainerIDIsIdentity(t *testing.T) {
	own := maps.Clone(ownPod)
	own["container.id"] = "containerd://own"
	c := newChain(t, own)
	got := c.send(t, map[string]any{"container.id": "containerd://victim", "k8s.container.name": "app"})
	if got["container.id"] != "containerd://own" {
		t.Errorf("resource container.id = %v, want the connection pod's containerd://own", got["container.id"])
	}
	if n := c.counts(t); !maps.Equal(n, map[string]int64{"container.id/replaced": 1}) {
		t.Errorf("counts %v", n)
	}
}
