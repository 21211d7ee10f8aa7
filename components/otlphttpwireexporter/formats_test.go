// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	pdatareq "go.opentelemetry.io/collector/pdata/xpdata/request"
	"go.opentelemetry.io/otel/trace"
)

// The item formats: made at intake, and those of earlier releases and of
// otlp_http read back.

// TestQueueItemIsMadeAtIntake: the intake converter encodes the item, and
// Marshal hands it over uncopied when the queue offers the request with the
// context it was converted with (the request's chunk is its tail); with a
// context that encodes differently (a span started in between, other
// metadata, another address) it stores that context, as upstream does.
func TestQueueItemIsMadeAtIntake(t *testing.T) {
	enc := queueEncoding{sig: logsSignal}
	for name, ctx := range richContexts(t) {
		r, err := logsRequest(ctx, makeLogs(0, 20))
		require.NoError(t, err, name)
		b, err := enc.Marshal(ctx, r)
		require.NoError(t, err, name)
		l, ok := splitItem(b)
		require.True(t, ok, name)
		assert.Same(t, &r.chunks[0][0], &b[l.dataFrom], "%s: the request's chunk is the item's data, uncopied", name)
		// the same context encoded again in a context made afresh
		rebuilt := client.NewContext(trace.ContextWithSpanContext(context.Background(), trace.SpanContextFromContext(ctx)), client.FromContext(ctx))
		b2, err := enc.Marshal(rebuilt, r)
		require.NoError(t, err, name)
		assert.Same(t, &b[0], &b2[0], "%s: a context that encodes the same", name)
		for other, octx := range richContexts(t) {
			if other == name || contextSummary(octx) == contextSummary(ctx) {
				continue
			}
			ob, err := enc.Marshal(octx, r)
			require.NoError(t, err)
			back, _, err := enc.Unmarshal(ob)
			require.NoError(t, err)
			assert.Equal(t, contextSummary(octx), contextSummary(back), "%s offered with %s's context", name, other)
		}
	}
	// merged: a new item, with the context given
	r, err := logsRequest(context.Background(), makeLogs(0, 5))
	require.NoError(t, err)
	o, err := logsRequest(context.Background(), makeLogs(5, 5))
	require.NoError(t, err)
	_, err = r.MergeSplit(context.Background(), 0, exporterhelper.RequestSizerTypeItems, o)
	require.NoError(t, err)
	ctx := tenantContext("a")
	b, err := enc.Marshal(ctx, r)
	require.NoError(t, err)
	back, got, err := enc.Unmarshal(b)
	require.NoError(t, err)
	assert.Equal(t, contextSummary(ctx), contextSummary(back))
	assert.Equal(t, seqRange(0, 10), seqsOf(decodeAll(t, got)))
}

// The previous release wrote bare items: Export<Signal>ServiceRequest bytes,
// no header, no context (several chunks concatenated).
func marshalBare(r *wireRequest) []byte { return bytes.Join(r.chunks, nil) }

// The release before wrote v1 items: 0x01, the item count, the bytes.
func marshalV1(r *wireRequest) []byte {
	buf := []byte{wireFormatV1}
	buf = binary.AppendUvarint(buf, uint64(r.items))
	return append(buf, bytes.Join(r.chunks, nil)...)
}

// A backlog written by the earlier releases (bare items, v1 items) is read
// back, with the empty context those items kept.
func TestQueueEncodingReadsEarlierReleasesItems(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, format := range []struct {
		name    string
		marshal func(*wireRequest) []byte
		tag     byte
	}{{"bare", marshalBare, bareTag}, {"v1", marshalV1, wireFormatV1}} {
		for _, sig := range allSignals() {
			enc := queueEncoding{sig: sig}
			for range 20 {
				r := randomRequest(t, rng, sig)
				r.appendFrom(randomRequest(t, rng, sig))
				if r.bytes == 0 && format.tag == bareTag {
					continue // the previous release wrote an empty request as v1
				}
				b := format.marshal(r)
				require.Equal(t, format.tag, b[0])
				ctx, back, err := enc.Unmarshal(b)
				require.NoError(t, err, format.name, sig.name)
				assert.Equal(t, contextSummary(context.Background()), contextSummary(ctx))
				assert.Equal(t, r.items, back.ItemsCount(), format.name, sig.name)
				assert.Equal(t, r.bytes, back.BytesSize(), format.name, sig.name)
				assert.Equal(t, bytes.Join(r.chunks, nil), bytes.Join(back.(*wireRequest).chunks, nil), format.name, sig.name)
			}
		}
	}
}

// Items queued by upstream's otlp_http (its own encoding, pdatareq, and the
// plain proto it falls back to, read as a bare item) are read back.
func TestQueueEncodingReadsUpstreamItems(t *testing.T) {
	up, err := pdatareq.MarshalLogs(context.Background(), makeLogs(0, 20))
	require.NoError(t, err)
	plain, err := (&plog.ProtoMarshaler{}).MarshalLogs(makeLogs(0, 20))
	require.NoError(t, err)
	upMetrics, err := pdatareq.MarshalMetrics(context.Background(), makeMetrics(4, 5))
	require.NoError(t, err)
	plainMetrics, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(makeMetrics(4, 5))
	require.NoError(t, err)
	td := ptrace.NewTraces()
	for range 7 {
		td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName("s")
	}
	upTraces, err := pdatareq.MarshalTraces(context.Background(), td)
	require.NoError(t, err)
	plainTraces, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		sig   *signal
		b     []byte
		items int
	}{
		{"logs pdatareq", logsSignal, up, 20},
		{"logs plain proto", logsSignal, plain, 20},
		{"metrics pdatareq", metricsSignal, upMetrics, 20},
		{"metrics plain proto", metricsSignal, plainMetrics, 20},
		{"traces pdatareq", tracesSignal, upTraces, 7},
		{"traces plain proto", tracesSignal, plainTraces, 7},
	} {
		_, r, uerr := queueEncoding{sig: tc.sig}.Unmarshal(tc.b)
		require.NoError(t, uerr, tc.name)
		assert.Equal(t, tc.items, r.ItemsCount(), tc.name)
		n, cerr := pdataCount(tc.sig, bytes.Join(r.(*wireRequest).chunks, nil))
		require.NoError(t, cerr, tc.name)
		assert.Equal(t, tc.items, n, tc.name)
	}
	_, r, err := queueEncoding{sig: logsSignal}.Unmarshal(up)
	require.NoError(t, err)
	assert.Equal(t, seqRange(0, 20), seqsOf(decodeAll(t, r)))
}

// Items of upstream's format in layouts its encoder does not write but its
// decoder reads: the context before the data (read in place), and an unknown
// field (a later version's addition: decoded with pdata, which skips it).
func TestQueueEncodingReadsOtherLayoutsOfUpstreamItems(t *testing.T) {
	ctx := tenantContext("a")
	item, err := pdatareq.MarshalLogs(ctx, makeLogs(0, 4))
	require.NoError(t, err)
	l, ok := splitItem(item)
	require.True(t, ok)
	require.Greater(t, l.ctxTo, l.ctxFrom)
	require.LessOrEqual(t, l.dataTo, l.ctxField, "upstream writes the data first")
	contextFirst := append(append(append([]byte{}, item[:5]...), item[l.ctxField:]...), item[5:l.ctxField]...)
	unknown := append(append([]byte{}, item...), 15<<3, 1) // field 15, varint 1
	for name, b := range map[string][]byte{"context first": contextFirst, "unknown field": unknown} {
		upCtx, upRaw := readAsUpstream(t, logsSignal, b)
		back, r, err := queueEncoding{sig: logsSignal}.Unmarshal(b)
		require.NoError(t, err, name)
		assert.Equal(t, contextSummary(ctx), contextSummary(upCtx), name)
		assert.Equal(t, contextSummary(ctx), contextSummary(back), name)
		assert.Equal(t, upRaw, bytes.Join(r.(*wireRequest).chunks, nil), name)
		assert.Equal(t, seqRange(0, 4), seqsOf(decodeAll(t, r)), name)
	}
	_, ok = splitItem(unknown)
	assert.False(t, ok, "an unknown field is left to pdata")
}
