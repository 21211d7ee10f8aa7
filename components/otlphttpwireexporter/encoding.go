package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
)

// wireFormatV1 starts every queue item this exporter writes. As a protobuf tag
// byte it would be field 0, which no protobuf encoder writes, so it can start
// neither an Export<Signal>ServiceRequest / <Signal>Data (first byte 0x0A,
// field 1 length-delimited) nor upstream's pdata/xpdata/request format (0x0D,
// field 1 fixed32 format_version): the three cannot be mistaken for each other.
const wireFormatV1 = 0x01

// queueEncoding is the persistent queue's encoding: header + the bytes.
//
//	0x01 | uvarint(items) | Export<Signal>ServiceRequest bytes
//
// The request context (client metadata, span links) is not stored: on read
// back a request has context.Background(), as with a plain-proto item upstream.
type queueEncoding struct{ sig *signal }

var _ exporterhelper.QueueBatchEncoding[xexporterhelper.Request] = queueEncoding{}

func (e queueEncoding) Marshal(_ context.Context, req xexporterhelper.Request) ([]byte, error) {
	r, ok := req.(*wireRequest)
	if !ok {
		return nil, fmt.Errorf("otlp_http_wire: cannot store a %T", req)
	}
	buf := make([]byte, 1+binary.MaxVarintLen64, 1+binary.MaxVarintLen64+r.bytes)
	buf[0] = wireFormatV1
	buf = buf[:1+binary.PutUvarint(buf[1:], uint64(r.items))]
	for _, c := range r.chunks {
		buf = append(buf, c...)
	}
	return buf, nil
}

// Unmarshal wraps the stored bytes without decoding or copying them: the
// request never writes to its chunks, and the storage hands out a value that
// is the caller's to keep (queue_storage serves the slice it was given at Set
// and never writes to it; file_storage copies out of bbolt).
//
// Items written by upstream's otlp_http (pdata/xpdata/request format, or plain
// protobuf as upstream falls back to) are decoded and re-encoded, so that a
// backlog queued by otlp_http can be delivered by this exporter.
func (e queueEncoding) Unmarshal(b []byte) (context.Context, xexporterhelper.Request, error) {
	if len(b) == 0 {
		return context.Background(), nil, fmt.Errorf("otlp_http_wire: empty %s queue item", e.sig.name)
	}
	if b[0] != wireFormatV1 {
		ctx, r, err := e.sig.fromUpstream(b)
		if err != nil {
			return context.Background(), nil, fmt.Errorf("otlp_http_wire: %s queue item (%d bytes, first byte 0x%02x) is neither this exporter's format nor otlp_http's: %w", e.sig.name, len(b), b[0], err)
		}
		return ctx, r, nil
	}
	items, n := binary.Uvarint(b[1:])
	if n <= 0 || items > uint64(len(b)) { // an item takes at least one byte
		return context.Background(), nil, fmt.Errorf("otlp_http_wire: %s queue item (%d bytes) has a corrupt header", e.sig.name, len(b))
	}
	r := newWireRequest(e.sig)
	r.add(b[1+n:], int(items))
	if r.items != int(items) {
		return context.Background(), nil, errors.New("otlp_http_wire: queue item holds items but no bytes")
	}
	return context.Background(), r, nil
}
