// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	pdatareq "go.opentelemetry.io/collector/pdata/xpdata/request"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension/queuestoragetest"
)

// tenantAuth is a client auth extension that reads the client metadata of
// the context a request is sent with, as auth extensions and headers_setter
// do: it sets X-Tenant to the metadata key "tenant".
type tenantAuth struct {
	component.StartFunc
	component.ShutdownFunc
}

var (
	_            extensionauth.HTTPClient = tenantAuth{}
	tenantAuthID                          = component.MustNewID("tenant_auth")
)

func (tenantAuth) RoundTripper(base http.RoundTripper) (http.RoundTripper, error) {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if v := client.FromContext(r.Context()).Metadata.Get("tenant"); len(v) > 0 {
			r = r.Clone(r.Context())
			r.Header["X-Tenant"] = v
		}
		return base.RoundTrip(r)
	}), nil
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type extensionsHost map[component.ID]component.Component

func (h extensionsHost) GetExtensions() map[component.ID]component.Component { return h }

// configFrom is factory f's default config with raw unmarshalled over it, as
// the collector reads a config file: both exporters get the same text.
func configFrom(t *testing.T, f exporter.Factory, raw map[string]any) component.Config {
	cfg := f.CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(cfg))
	return cfg
}

// tenantContext is the context a receiver with include_metadata passes on
// for a request of tenant.
func tenantContext(tenant string) context.Context {
	return client.NewContext(context.Background(), client.Info{
		Metadata: client.NewMetadata(map[string][]string{"tenant": {tenant}}),
		Addr:     &net.TCPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 40000},
	})
}

// sendTenants runs exporter f/x with config raw on a persistent queue in dir:
// 10 records of tenant a, then 10 of tenant b. With restart, the backend
// refuses them first, the collector stops with them queued and starts again
// with the backend up. It returns what the backend accepted, a line per
// request: the X-Tenant header the auth extension set and the records.
func sendTenants(t *testing.T, f exporter.Factory, raw map[string]any, restart bool) []string {
	b := newBackend(t)
	raw = maps.Clone(raw)
	raw["endpoint"] = b.srv.URL
	raw["tls"] = map[string]any{"ca_file": b.caFile}
	dir := t.TempDir()
	start := func() (exporter.Logs, func()) {
		storage, stopStorage := queuestoragetest.Start(t, dir)
		host := extensionsHost(maps.Clone(storage.GetExtensions()))
		host[tenantAuthID] = tenantAuth{}
		return startLogs(t, f, "x", configFrom(t, f, raw), host, nil), stopStorage
	}
	if restart {
		b.setRespond(func(int) (int, http.Header, []byte) { return http.StatusServiceUnavailable, nil, nil })
	}
	exp, stopStorage := start()
	require.NoError(t, exp.ConsumeLogs(tenantContext("a"), makeLogs(0, 10)))
	require.NoError(t, exp.ConsumeLogs(tenantContext("b"), makeLogs(10, 10)))
	if restart {
		require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.reqs >= 2 }, 60e9, 10e6)
		require.NoError(t, exp.Shutdown(context.Background()))
		stopStorage()
		require.Empty(t, b.delivered())
		b.setRespond(nil)
		exp, _ = start()
	}
	b.waitRecords(t, 20)
	require.NoError(t, exp.Shutdown(context.Background()))
	var out []string
	for _, r := range b.acceptedRequests() {
		out = append(out, fmt.Sprintf("tenant %q: %v", r.header.Get("X-Tenant"), r.seqs))
	}
	slices.Sort(out)
	return out
}

// TestRequestContextThroughPersistentQueue: otlp_http and otlp_http_wire on
// the same config, a persistent queue with batches partitioned by the
// tenant's metadata and an auth extension that reads it at send time, get
// the same requests to the backend: one per tenant, each with its tenant's
// header, straight through and across a restart.
func TestRequestContextThroughPersistentQueue(t *testing.T) {
	raw := map[string]any{
		"auth":             map[string]any{"authenticator": tenantAuthID.String()},
		"retry_on_failure": map[string]any{"initial_interval": "10ms", "max_interval": "50ms"},
		"sending_queue": map[string]any{
			"storage":       queuestoragetest.ID().String(),
			"num_consumers": 2,
			"batch": map[string]any{
				// 20 records reach min_size only when the tenants are merged
				"sizer": "items", "min_size": 20, "flush_timeout": "100ms",
				"partition": map[string]any{"metadata_keys": []any{"tenant"}},
			},
		},
	}
	want := []string{
		fmt.Sprintf("tenant %q: %v", "a", seqRange(0, 10)),
		fmt.Sprintf("tenant %q: %v", "b", seqRange(10, 10)),
	}
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			upstream := sendTenants(t, otlphttpexporter.NewFactory(), raw, restart)
			require.Equal(t, want, upstream, "upstream's behaviour, the reference")
			assert.Equal(t, upstream, sendTenants(t, NewFactory(), raw, restart), "otlp_http_wire sends what otlp_http sends")
		})
	}
}

// contextSummary is what upstream's queue encoding keeps of a context:
// client metadata, client address and span context.
func contextSummary(ctx context.Context) string {
	info := client.FromContext(ctx)
	var s strings.Builder
	keys := slices.Sorted(info.Metadata.Keys())
	for _, k := range keys {
		fmt.Fprintf(&s, "%s=%q ", k, info.Metadata.Get(k))
	}
	if info.Addr != nil {
		fmt.Fprintf(&s, "addr=%T(%s/%s) ", info.Addr, info.Addr.Network(), info.Addr.String())
	}
	sc := trace.SpanContextFromContext(ctx)
	fmt.Fprintf(&s, "span=%s/%s/%s/%q/remote=%v", sc.TraceID(), sc.SpanID(), sc.TraceFlags(), sc.TraceState().String(), sc.IsRemote())
	return s.String()
}

// richContexts are contexts with everything upstream's encoding keeps.
func richContexts(t *testing.T) map[string]context.Context {
	ts, err := trace.ParseTraceState("vendor=a,other=b")
	require.NoError(t, err)
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true,
	})
	md := client.NewMetadata(map[string][]string{"tenant": {"a"}, "x-scope": {"one", "two"}, "empty": {}})
	return map[string]context.Context{
		"background": context.Background(),
		"tcp":        client.NewContext(context.Background(), client.Info{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 4318}}),
		"metadata, udp, span": trace.ContextWithSpanContext(
			client.NewContext(context.Background(), client.Info{Metadata: md, Addr: &net.UDPAddr{IP: net.ParseIP("fe80::1"), Port: 1, Zone: "eth0"}}), sc),
		"ip":   client.NewContext(context.Background(), client.Info{Addr: &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)}}),
		"unix": client.NewContext(context.Background(), client.Info{Metadata: md, Addr: &net.UnixAddr{Name: "/run/otlp.sock", Net: "unix"}}),
		"span": trace.ContextWithSpanContext(context.Background(), sc),
	}
}

// upstreamItem is the item upstream's encoding writes for r's data with ctx.
func upstreamItem(t *testing.T, ctx context.Context, r *wireRequest) []byte {
	raw := bytes.Join(r.chunks, nil)
	var (
		b   []byte
		err error
	)
	switch r.sig {
	case logsSignal:
		ld, uerr := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(raw)
		require.NoError(t, uerr)
		b, err = pdatareq.MarshalLogs(ctx, ld)
	case metricsSignal:
		md, uerr := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(raw)
		require.NoError(t, uerr)
		b, err = pdatareq.MarshalMetrics(ctx, md)
	default:
		td, uerr := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
		require.NoError(t, uerr)
		b, err = pdatareq.MarshalTraces(ctx, td)
	}
	require.NoError(t, err)
	return b
}

// readAsUpstream reads item b with upstream's encoding, as otlp_http does,
// and returns its context and its data re-encoded as OTLP bytes.
func readAsUpstream(t *testing.T, sig *signal, b []byte) (context.Context, []byte) {
	var (
		ctx context.Context
		raw []byte
		err error
	)
	switch sig {
	case logsSignal:
		var ld plog.Logs
		ctx, ld, err = pdatareq.UnmarshalLogs(b)
		require.NoError(t, err)
		raw, err = (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	case metricsSignal:
		var md pmetric.Metrics
		ctx, md, err = pdatareq.UnmarshalMetrics(b)
		require.NoError(t, err)
		raw, err = (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	default:
		var td ptrace.Traces
		ctx, td, err = pdatareq.UnmarshalTraces(b)
		require.NoError(t, err)
		raw, err = (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	}
	require.NoError(t, err)
	return ctx, raw
}

// TestQueueEncodingKeepsTheRequestContext: an item keeps what upstream's
// encoding keeps of the context (client metadata, client address, span
// context), and the two encodings read each other's items with the same
// context and data: this exporter reads otlp_http's backlog, and otlp_http
// reads this exporter's (a downgrade keeps the queue).
func TestQueueEncodingKeepsTheRequestContext(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for name, ctx := range richContexts(t) {
		for _, sig := range allSignals() {
			t.Run(name+"/"+sig.name, func(t *testing.T) {
				enc := queueEncoding{sig: sig}
				r := randomRequest(t, rng, sig)
				r.appendFrom(randomRequest(t, rng, sig))
				raw := bytes.Join(r.chunks, nil)
				up := upstreamItem(t, ctx, r)
				upCtx, _ := readAsUpstream(t, sig, up)
				want := contextSummary(upCtx)
				if name != "background" {
					require.NotEqual(t, want, contextSummary(context.Background()), "upstream keeps this context")
				}

				b, err := enc.Marshal(ctx, r)
				require.NoError(t, err)
				gotCtx, back, err := enc.Unmarshal(b)
				require.NoError(t, err)
				assert.Equal(t, want, contextSummary(gotCtx), "the context read back is upstream's")
				assert.Equal(t, raw, bytes.Join(back.(*wireRequest).chunks, nil))
				assert.Equal(t, r.items, back.ItemsCount())

				downCtx, downRaw := readAsUpstream(t, sig, b)
				assert.Equal(t, want, contextSummary(downCtx), "otlp_http reads the context of this exporter's item")
				assert.Equal(t, raw, downRaw, "otlp_http reads the data of this exporter's item")

				fromUpCtx, fromUp, err := enc.Unmarshal(up)
				require.NoError(t, err)
				assert.Equal(t, want, contextSummary(fromUpCtx), "this exporter reads the context of otlp_http's item")
				assert.Equal(t, raw, bytes.Join(fromUp.(*wireRequest).chunks, nil))
			})
		}
	}
}
