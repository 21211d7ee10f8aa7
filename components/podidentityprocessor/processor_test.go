// SPDX-License-Identifier: Apache-2.0

package podidentityprocessor

import (
	"context"
	"maps"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-relay/otelcol-relay/components/podidentityprocessor/internal/metadata"
)

// association stands in for k8s_attributes between the two instances: like the
// real one it only writes attributes that are not set, from the pod it found.
type association struct {
	next consumer.Logs
	pod  map[string]string // nil: no pod matches the connection
}

func (a *association) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

func (a *association) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		attrs := ld.ResourceLogs().At(i).Resource().Attributes()
		for k, v := range a.pod {
			if _, ok := attrs.Get(k); !ok {
				attrs.PutStr(k, v)
			}
		}
	}
	return a.next.ConsumeLogs(ctx, ld)
}

type chain struct {
	in   processor.Logs
	sink *consumertest.LogsSink
	tel  *componenttest.Telemetry
}

// newChain builds set_aside -> association(pod) -> verify -> sink through the
// factory, as the agent's pipeline does.
func newChain(t *testing.T, pod map[string]string) *chain {
	t.Helper()
	ctx := context.Background()
	c := &chain{sink: new(consumertest.LogsSink), tel: componenttest.NewTelemetry()}
	t.Cleanup(func() { _ = c.tel.Shutdown(ctx) })
	f := NewFactory()
	mk := func(mode Mode, next consumer.Logs) processor.Logs {
		cfg := f.CreateDefaultConfig().(*Config)
		cfg.Mode = mode
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		set := processortest.NewNopSettings(metadata.Type)
		set.TelemetrySettings = c.tel.NewTelemetrySettings()
		p, err := f.CreateLogs(ctx, set, cfg, next)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(ctx, componenttest.NewNopHost()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Shutdown(ctx) })
		return p
	}
	verify := mk(ModeVerify, c.sink)
	c.in = mk(ModeSetAside, &association{next: verify, pod: pod})
	return c
}

func (c *chain) send(t *testing.T, resource map[string]any) map[string]any {
	t.Helper()
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	if err := rl.Resource().Attributes().FromRaw(resource); err != nil {
		t.Fatal(err)
	}
	rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("x")
	c.sink.Reset()
	if err := c.in.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	return c.sink.AllLogs()[0].ResourceLogs().At(0).Resource().Attributes().AsRaw()
}

// metricOverwritten is the name dashboards and alerts know; metadata.yaml must keep it.
const metricOverwritten = "otelcol_processor_pod_identity_claims_overwritten"

// counts maps "attribute/outcome" to the counter's value.
func (c *chain) counts(t *testing.T) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	m, err := c.tel.GetMetric(metricOverwritten)
	if err != nil {
		return out // never recorded
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		a, _ := dp.Attributes.Value("attribute")
		o, _ := dp.Attributes.Value("outcome")
		out[a.AsString()+"/"+o.AsString()] = dp.Value
	}
	return out
}

var ownPod = map[string]string{
	"k8s.pod.uid": "uid-own", "k8s.pod.name": "checkout-1", "k8s.namespace.name": "payments",
	"k8s.deployment.name": "checkout", "k8s.node.name": "node-a",
}

func TestClaimOfAnotherPodIsReplacedAndCounted(t *testing.T) {
	c := newChain(t, ownPod)
	got := c.send(t, map[string]any{
		"service.name": "checkout", "k8s.container.name": "app",
		"k8s.pod.uid": "uid-victim", "k8s.pod.name": "vault-0", "k8s.namespace.name": "secrets",
		"k8s.node.name": "node-a", // true: not counted
	})
	want := map[string]any{
		"service.name": "checkout", "k8s.container.name": "app",
		"k8s.pod.uid": "uid-own", "k8s.pod.name": "checkout-1", "k8s.namespace.name": "payments",
		"k8s.deployment.name": "checkout", "k8s.node.name": "node-a",
	}
	if !maps.Equal(got, want) {
		t.Errorf("resource after the chain:\n got  %v\n want %v", got, want)
	}
	wantCounts := map[string]int64{"k8s.pod.uid/replaced": 1, "k8s.pod.name/replaced": 1, "k8s.namespace.name/replaced": 1}
	if got := c.counts(t); !maps.Equal(got, wantCounts) {
		t.Errorf("counter %s = %v, want %v", metricOverwritten, got, wantCounts)
	}
}

func TestHonestClaimIsNotCounted(t *testing.T) {
	c := newChain(t, ownPod)
	got := c.send(t, map[string]any{"k8s.pod.uid": "uid-own", "k8s.pod.name": "checkout-1", "k8s.namespace.name": "payments"})
	if got["k8s.pod.uid"] != "uid-own" || got["k8s.deployment.name"] != "checkout" {
		t.Errorf("resource %v", got)
	}
	if n := c.counts(t); len(n) != 0 {
		t.Errorf("an honest claim was counted: %v", n)
	}
}

func TestClaimWithoutAPodIsDropped(t *testing.T) {
	c := newChain(t, nil)
	got := c.send(t, map[string]any{"service.name": "x", "k8s.pod.uid": "uid-victim", "k8s.namespace.name": "secrets"})
	if !maps.Equal(got, map[string]any{"service.name": "x"}) {
		t.Errorf("a claim no connection confirms survived: %v", got)
	}
	if n := c.counts(t); !maps.Equal(n, map[string]int64{"k8s.pod.uid/dropped": 1, "k8s.namespace.name/dropped": 1}) {
		t.Errorf("counts %v", n)
	}
}

func TestSmuggledClaimIsRemoved(t *testing.T) {
	c := newChain(t, ownPod)
	got := c.send(t, map[string]any{claimPrefix + "k8s.pod.uid": "uid-own", claimPrefix + "x": "y"})
	for k := range got {
		if strings.HasPrefix(k, claimPrefix) {
			t.Errorf("attribute %s left the chain: %v", k, got)
		}
	}
	if n := c.counts(t); len(n) != 0 {
		t.Errorf("counts %v", n)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Attributes: defaultAttributes}, `mode: must be set, to "set_aside" (before k8s_attributes) or "verify" (after it)`},
		{Config{Mode: "before", Attributes: defaultAttributes}, `mode "before": must be "set_aside"`},
		{Config{Mode: ModeVerify}, "attributes: must name at least one resource attribute"},
		{Config{Mode: ModeVerify, Attributes: []string{"k8s.pod.uid", "k8s.pod.uid"}}, `attributes[1] "k8s.pod.uid": listed twice`},
		{Config{Mode: ModeVerify, Attributes: []string{claimPrefix + "a"}}, `attributes[0] "otelcol_relay.claimed.a": the prefix`},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	ok := createDefaultConfig()
	ok.Mode = ModeSetAside
	if err := ok.Validate(); err != nil {
		t.Errorf("default config with a mode: %v", err)
	}
}
