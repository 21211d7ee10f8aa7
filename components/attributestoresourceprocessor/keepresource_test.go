// SPDX-License-Identifier: Apache-2.0

package attributestoresourceprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
)

// TestKeepResourceNeverLiftsOverAResourceIdentity: with keep_resource, a
// resource that already names a pod (an agent's, from the connection) keeps
// every key as it is, and what the records claim is removed, not lifted. A
// resource that names none still gets the records' values (fluent-bit's).
func TestKeepResourceNeverLiftsOverAResourceIdentity(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Keys = podKeys
	cfg.KeepResource = true
	require.NoError(t, cfg.Validate())
	sink := new(consumertest.LogsSink)
	p := start(t, f, cfg, sink)

	ld := plog.NewLogs()
	agent := ld.ResourceLogs().AppendEmpty()
	agent.Resource().Attributes().PutStr("k8s.pod.uid", "uid-own")
	agent.Resource().Attributes().PutStr("k8s.pod.name", "checkout-1")
	rec := agent.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	rec.Attributes().PutStr("k8s.pod.uid", "uid-victim")
	rec.Attributes().PutStr("k8s.namespace.name", "secrets")
	rec.Attributes().PutStr("case", "agent")
	fluentBit := ld.ResourceLogs().AppendEmpty()
	rec = fluentBit.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	rec.Attributes().PutStr("k8s.pod.name", "web-1")
	rec.Attributes().PutStr("k8s.namespace.name", "shop")
	rec.Attributes().PutStr("case", "fluent-bit")
	require.NoError(t, p.ConsumeLogs(context.Background(), ld))

	got := map[string]map[string]any{}
	out := sink.AllLogs()[0]
	for i := 0; i < out.ResourceLogs().Len(); i++ {
		rl := out.ResourceLogs().At(i)
		lr := rl.ScopeLogs().At(0).LogRecords().At(0)
		c, _ := lr.Attributes().Get("case")
		got[c.Str()] = rl.Resource().Attributes().AsRaw()
		assert.Equal(t, map[string]any{"case": c.Str()}, lr.Attributes().AsRaw(), "record attributes of %s", c.Str())
	}
	assert.Equal(t, map[string]any{"k8s.pod.uid": "uid-own", "k8s.pod.name": "checkout-1"}, got["agent"], "a resource that names its pod")
	assert.Equal(t, map[string]any{"k8s.pod.name": "web-1", "k8s.namespace.name": "shop"}, got["fluent-bit"], "a resource that names none")
}
