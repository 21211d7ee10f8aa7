// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	pdatareq "go.opentelemetry.io/collector/pdata/xpdata/request"

	"github.com/otelcol-relay/otelcol-relay/components/internal/handoff"
)

// The first byte of a queue item tells its format. As a protobuf tag byte,
// 0x0D is field 1 fixed32, 0x0A field 1 length-delimited and 0x01 field 0,
// which no protobuf encoder writes: they cannot be mistaken for each other.
const (
	// upstreamTag starts the items written now: upstream's
	// pdata/xpdata/request format (format_version 1), which its encoder
	// writes in this order:
	//
	//	0x0D fixed32(1) | 0x1A len <Signal>Data | 0x12 len RequestContext
	//
	// <Signal>Data has the same field 1 as Export<Signal>ServiceRequest
	// (LogsData is ExportLogsServiceRequest on the wire), so the payload of
	// field 3 is the request's bytes. otlp_http reads these items as its own.
	upstreamTag     = 0x0D
	upstreamVersion = 1
	contextTag      = 0x12 // field 2, length-delimited
	dataTag         = 0x1A // field 3, length-delimited
	// bareTag starts the items of the previous release (a bare, non-empty
	// Export<Signal>ServiceRequest, no context) and the plain-proto items
	// upstream's otlp_http falls back to writing (the same message).
	bareTag = 0x0A
	// wireFormatV1 starts the items of the release before:
	// 0x01 | uvarint(items) | Export<Signal>ServiceRequest bytes, no context.
	wireFormatV1 = 0x01
)

// queueEncoding is the persistent queue's encoding. An item is upstream's
// queue item: the request context (client metadata, client address, span
// context: what upstream's encoding keeps) and the request's
// Export<Signal>ServiceRequest bytes as the last field. The item count is
// found again on read back by walking the wire format (wirecount.go).
//
// The item is made at intake (intakeRequest): the converter encodes the
// pdata with upstream's own encoder, context included, and the request's
// chunk is field 3's payload in that buffer. Marshal hands the buffer over as it is
// when the context it is given is the one encoded; otherwise (a merged
// request, or a context that differs, such as a span the queue started with
// the collector's own tracing on) it encodes a new item, a copy.
type queueEncoding struct {
	sig *signal
	// handoff, once the exporter has started on a storage that takes items
	// over, is where Marshal gives them; nil in tests.
	handoff *atomic.Pointer[handoff.Registry]
}

var _ exporterhelper.QueueBatchEncoding[xexporterhelper.Request] = queueEncoding{}

// Marshal returns the request's item itself, uncopied, when it has one and
// ctx carries the same request context.
//
// The item is given to queue_storage (components/internal/handoff), which
// then keeps it without the copy it makes of any other value. That is safe
// because an item and its chunk are never written to after they are made
// (see wireRequest): requests, merged batches, split pieces, HTTP bodies and
// compression only read them, and persistentQueue.putInternal hands the
// slice to the storage and keeps no other use of it.
func (e queueEncoding) Marshal(ctx context.Context, req xexporterhelper.Request) ([]byte, error) {
	r, ok := req.(*wireRequest)
	if !ok {
		return nil, fmt.Errorf("otlp_http_wire: cannot store a %T", req)
	}
	if b := r.encodedItem(ctx); b != nil {
		e.give(b)
		return b, nil
	}
	// A new item, in the order upstream's encoder writes: the context's
	// field is the one upstream encodes for ctx.
	empty, err := pdatareq.MarshalLogs(ctx, plog.NewLogs())
	if err != nil {
		return nil, fmt.Errorf("otlp_http_wire: encoding the context of a %s request: %w", e.sig.name, err)
	}
	l, ok := splitItem(empty)
	if !ok || l.dataTo != l.dataFrom {
		return nil, fmt.Errorf("otlp_http_wire: pdata/xpdata/request wrote an empty item of an unknown layout (% x)", empty)
	}
	ctxField := empty[l.ctxField:l.ctxTo]
	buf := make([]byte, 0, 6+binary.MaxVarintLen64+r.bytes+len(ctxField))
	buf = append(buf, empty[:5]...)
	buf = append(buf, dataTag)
	buf = binary.AppendUvarint(buf, uint64(r.bytes))
	for _, c := range r.chunks {
		buf = append(buf, c...)
	}
	buf = append(buf, ctxField...)
	e.give(buf)
	return buf, nil
}

func (e queueEncoding) give(b []byte) {
	if e.handoff != nil {
		e.handoff.Load().Give(b)
	}
}

// itemLayout is where an item of upstream's format keeps its fields.
type itemLayout struct {
	// ctxField is where field 2 (its tag) starts, ctxFrom where its payload,
	// the RequestContext, starts and ctxTo where it ends; all 0 if absent.
	ctxField, ctxFrom, ctxTo int
	// dataFrom and dataTo delimit field 3's payload, the request's bytes.
	dataFrom, dataTo int
}

// splitItem finds the fields of an item of upstream's format, version 1:
// the header, then fields 2 and 3 once each, in either order. ok is false
// for anything else (the item is then decoded with pdata, which takes any
// protobuf).
func splitItem(b []byte) (l itemLayout, ok bool) {
	if len(b) < 5 || b[0] != upstreamTag || binary.LittleEndian.Uint32(b[1:5]) != upstreamVersion {
		return l, false
	}
	var seenCtx, seenData bool
	pos := 5
	for pos < len(b) {
		tag := b[pos]
		n, k := binary.Uvarint(b[pos+1:])
		if k <= 0 || n > uint64(len(b)-pos-1-k) {
			return l, false
		}
		from, to := pos+1+k, pos+1+k+int(n)
		switch {
		case tag == contextTag && !seenCtx:
			seenCtx, l.ctxField, l.ctxFrom, l.ctxTo = true, pos, from, to
		case tag == dataTag && !seenData:
			seenData, l.dataFrom, l.dataTo = true, from, to
		default:
			return l, false
		}
		pos = to
	}
	if !seenData {
		l.dataFrom, l.dataTo = pos, pos
	}
	return l, true
}

// Unmarshal wraps the stored bytes without decoding or copying the data: the
// request never writes to its chunks, and the storage hands out a value that
// is the caller's to keep (queue_storage serves the slice it was given at Set
// or read from its file, and never writes to it; file_storage copies out of
// bbolt). Only the request context is decoded, by upstream's decoder.
//
// It reads this version's items (0x0D, upstream's format, so that a backlog
// queued by otlp_http is delivered too; one of another layout is decoded
// with pdata and re-encoded), the previous release's bare items (0x0A, which
// are also upstream's plain-proto fallback) and the v1 items (0x01) of the
// release before. Those two kept no context: context.Background().
func (e queueEncoding) Unmarshal(b []byte) (context.Context, xexporterhelper.Request, error) {
	if len(b) == 0 {
		return context.Background(), nil, fmt.Errorf("otlp_http_wire: empty %s queue item", e.sig.name)
	}
	switch b[0] {
	case upstreamTag:
		if l, ok := splitItem(b); ok {
			return e.unmarshalItem(b, l)
		}
	case bareTag:
		n, err := e.sig.count(b)
		if err != nil {
			return context.Background(), nil, e.invalid(b, err)
		}
		r := newWireRequest(e.sig)
		r.add(b, n)
		return context.Background(), r, nil
	case wireFormatV1:
		return e.unmarshalV1(b)
	}
	ctx, r, err := e.sig.fromUpstream(b)
	if err != nil {
		return context.Background(), nil, fmt.Errorf("otlp_http_wire: %s queue item (%d bytes, first byte 0x%02x) is neither this exporter's format nor otlp_http's: %w", e.sig.name, len(b), b[0], err)
	}
	return ctx, r, nil
}

func (e queueEncoding) unmarshalItem(b []byte, l itemLayout) (context.Context, xexporterhelper.Request, error) {
	n, err := e.sig.count(b[l.dataFrom:l.dataTo])
	if err != nil {
		return context.Background(), nil, e.invalid(b, err)
	}
	ctx := context.Background()
	if l.ctxTo > l.ctxFrom {
		// Upstream decodes the context: the header and field 2 alone are an
		// item without data, the same for every signal (a copy of a few
		// bytes, not of the data).
		head := make([]byte, 0, 5+l.ctxTo-l.ctxField)
		head = append(append(head, b[:5]...), b[l.ctxField:l.ctxTo]...)
		if ctx, _, err = pdatareq.UnmarshalLogs(head); err != nil {
			return context.Background(), nil, fmt.Errorf("otlp_http_wire: %s queue item (%d bytes) has an invalid request context: %w", e.sig.name, len(b), err)
		}
	}
	return ctx, requestFromItem(ctx, e.sig, b, l, n), nil
}

func (e queueEncoding) invalid(b []byte, err error) error {
	return fmt.Errorf("otlp_http_wire: %s queue item (%d bytes) is not a valid %s: %w", e.sig.name, len(b), e.sig.message, err)
}

func (e queueEncoding) unmarshalV1(b []byte) (context.Context, xexporterhelper.Request, error) {
	items, n := binary.Uvarint(b[1:])
	if n <= 0 || items > uint64(len(b)) { // an item takes at least one byte
		return context.Background(), nil, fmt.Errorf("otlp_http_wire: %s queue item (%d bytes) has a corrupt header", e.sig.name, len(b))
	}
	r := newWireRequest(e.sig)
	r.add(b[1+n:], int(items))
	if r.items != int(items) {
		return context.Background(), nil, fmt.Errorf("otlp_http_wire: %s queue item (%d bytes) counts %d items but holds no bytes", e.sig.name, len(b), items)
	}
	return context.Background(), r, nil
}
