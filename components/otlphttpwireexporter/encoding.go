package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"context"
	"encoding/binary"
	"fmt"

	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
)

// The first byte of a queue item tells its format. As a protobuf tag byte,
// 0x0A is field 1 length-delimited, 0x0D field 1 fixed32 and 0x01 field 0,
// which no protobuf encoder writes: the three cannot be mistaken for each
// other.
const (
	// wireFormatV1 starts the items written by session 4's release:
	// 0x01 | uvarint(items) | Export<Signal>ServiceRequest bytes. It is still
	// read (a backlog left by that release is delivered after an upgrade) and
	// still written for an empty request, which has no bytes to start with 0x0A.
	wireFormatV1 = 0x01
	// bareTag starts every non-empty Export<Signal>ServiceRequest, the items
	// written now: field 1 (resource_*), length-delimited. It also starts
	// the plain-proto items upstream's otlp_http falls back to writing:
	// <Signal>Data has the same field 1 as Export<Signal>ServiceRequest
	// (LogsData is ExportLogsServiceRequest on the wire), so reading those as
	// bare items is right.
	bareTag = 0x0A
	// upstream's pdata/xpdata/request format (field 1, fixed32
	// format_version) starts with 0x0D; it is decoded with pdata.
)

// queueEncoding is the persistent queue's encoding. An item is the request's
// Export<Signal>ServiceRequest bytes, nothing else: the item count is found
// again on read back by walking the wire format (wirecount.go), which costs
// far less than a copy of every request at write.
//
// The request context (client metadata, span links) is not stored: on read
// back a request has context.Background(), as with a plain-proto item upstream.
type queueEncoding struct{ sig *signal }

var _ exporterhelper.QueueBatchEncoding[xexporterhelper.Request] = queueEncoding{}

// Marshal returns the request's one chunk itself, uncopied, when it has one
// (the normal case: requests are offered to the queue before batching merges
// them) and concatenates only several chunks.
//
// The storage may keep the returned slice by reference: queue_storage's value
// cache holds values of 4 KiB and more without copying them (store.go), and
// bbolt holds a value until its transaction commits. That is safe because a
// chunk is never written to after it is made (see wireRequest): requests,
// merged batches, split pieces, HTTP bodies and compression only read it, and
// persistentQueue.putInternal hands the slice to the storage and keeps no
// other use of it.
func (e queueEncoding) Marshal(_ context.Context, req xexporterhelper.Request) ([]byte, error) {
	r, ok := req.(*wireRequest)
	if !ok {
		return nil, fmt.Errorf("otlp_http_wire: cannot store a %T", req)
	}
	switch {
	case len(r.chunks) == 0:
		return []byte{wireFormatV1, 0}, nil
	case r.chunks[0][0] != bareTag:
		// Not one of ours (every chunk is a pdata-encoded request, which
		// starts with field 1): keep the count beside it rather than guess.
		return marshalV1(r), nil
	case len(r.chunks) == 1:
		return r.chunks[0], nil
	}
	buf := make([]byte, 0, r.bytes)
	for _, c := range r.chunks {
		buf = append(buf, c...)
	}
	return buf, nil
}

func marshalV1(r *wireRequest) []byte {
	buf := make([]byte, 1+binary.MaxVarintLen64, 1+binary.MaxVarintLen64+r.bytes)
	buf[0] = wireFormatV1
	buf = buf[:1+binary.PutUvarint(buf[1:], uint64(r.items))]
	for _, c := range r.chunks {
		buf = append(buf, c...)
	}
	return buf
}

// Unmarshal wraps the stored bytes without decoding or copying them: the
// request never writes to its chunks, and the storage hands out a value that
// is the caller's to keep (queue_storage serves the slice it was given at Set
// or read from its file, and never writes to it; file_storage copies out of
// bbolt).
//
// It reads three formats: bare items (0x0A, this version's), v1 items (0x01,
// the previous release's) and upstream otlp_http's items (pdata/xpdata/request
// format, decoded and re-encoded, so that a backlog queued by otlp_http is
// delivered by this exporter).
func (e queueEncoding) Unmarshal(b []byte) (context.Context, xexporterhelper.Request, error) {
	if len(b) == 0 {
		return context.Background(), nil, fmt.Errorf("otlp_http_wire: empty %s queue item", e.sig.name)
	}
	switch b[0] {
	case bareTag:
		n, err := e.sig.count(b)
		if err != nil {
			return context.Background(), nil, fmt.Errorf("otlp_http_wire: %s queue item (%d bytes) is not a valid %s: %w", e.sig.name, len(b), e.sig.message, err)
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
