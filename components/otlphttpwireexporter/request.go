// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
)

// wireRequest is a request as OTLP protobuf bytes: chunks, each a serialized
// Export<Signal>ServiceRequest, whose concatenation is one too (field 1 is
// repeated). Chunks are never written to after creation: merged requests,
// queue storage and HTTP bodies share them.
type wireRequest struct {
	sig    *signal
	chunks [][]byte
	counts []int // items per chunk
	items  int
	bytes  int

	// item is the queue item (encoding.go) whose data, at itemLayout, is
	// the request's one chunk: made at intake or read from the queue, with
	// the request context itemCtx in it. Nil once the request holds more.
	item       []byte
	itemLayout itemLayout
	itemCtx    requestContext
}

var _ xexporterhelper.Request = (*wireRequest)(nil)

func newWireRequest(sig *signal) *wireRequest { return &wireRequest{sig: sig} }

// requestFromItem is the request of queue item b (layout l), with ctx
// encoded in it.
func requestFromItem(ctx context.Context, sig *signal, b []byte, l itemLayout, items int) *wireRequest {
	r := newWireRequest(sig)
	r.add(b[l.dataFrom:l.dataTo], items)
	r.item, r.itemLayout, r.itemCtx = b, l, requestContextOf(ctx)
	return r
}

// encodedItem is the request's queue item if it still holds just that item's
// data and ctx encodes the item's request context; nil otherwise.
func (r *wireRequest) encodedItem(ctx context.Context) []byte {
	if r.item == nil {
		return nil
	}
	data := r.item[r.itemLayout.dataFrom:r.itemLayout.dataTo]
	switch {
	case len(r.chunks) == 0 && len(data) == 0:
	case len(r.chunks) == 1 && len(data) > 0 && len(r.chunks[0]) == len(data) && &r.chunks[0][0] == &data[0]:
	default:
		return nil
	}
	if !r.itemCtx.encodesAs(ctx) {
		return nil
	}
	return r.item
}

func (r *wireRequest) add(chunk []byte, items int) {
	if len(chunk) == 0 {
		return
	}
	r.chunks = append(r.chunks, chunk)
	r.counts = append(r.counts, items)
	r.items += items
	r.bytes += len(chunk)
}

func (r *wireRequest) ItemsCount() int { return r.items }

// BytesSize is the size of the OTLP message, as upstream's bytes sizer counts
// plog.Logs: the concatenation is exactly that message.
func (r *wireRequest) BytesSize() int { return r.bytes }

// MergeSplit appends other's chunks (no byte is copied) and, with a limit,
// cuts the result into requests of at most maxSize. A chunk that straddles a
// limit is decoded and re-encoded in pieces (record granularity, resource and
// scope kept) so that every request but the last is full, as upstream's
// logs/metrics/traces requests are.
//
// Without a split, other's chunks are appended to r in place (the batcher
// merges many small requests into its current one: copying the chunk list
// at every merge would be quadratic). A split builds new requests and leaves
// r and other as they were, so an error never follows a mutation. The bytes
// of a chunk are never written to.
func (r *wireRequest) MergeSplit(_ context.Context, maxSize int, szt exporterhelper.RequestSizerType, other xexporterhelper.Request) ([]xexporterhelper.Request, error) {
	var o *wireRequest
	if other != nil {
		var ok bool
		if o, ok = other.(*wireRequest); !ok || o.sig != r.sig {
			return nil, fmt.Errorf("otlp_http_wire: cannot merge a %T into a %s request", other, r.sig.name)
		}
	}
	items, bytes := r.items, r.bytes
	if o != nil {
		items, bytes = items+o.items, bytes+o.bytes
	}
	var size func(chunk []byte, items int) int
	fits := true
	switch szt {
	case exporterhelper.RequestSizerTypeItems:
		size = func(_ []byte, items int) int { return items }
		fits = items <= maxSize
	case exporterhelper.RequestSizerTypeBytes:
		size = func(chunk []byte, _ int) int { return len(chunk) }
		fits = bytes <= maxSize
	}
	// requests: a merged request is one request whatever it holds.
	if maxSize <= 0 || fits {
		if o != nil {
			r.appendFrom(o)
		}
		return []xexporterhelper.Request{r}, nil
	}
	merged := &wireRequest{sig: r.sig}
	merged.appendFrom(r)
	if o != nil {
		merged.appendFrom(o)
	}
	return merged.split(maxSize, szt == exporterhelper.RequestSizerTypeBytes, size)
}

func (r *wireRequest) appendFrom(o *wireRequest) {
	r.item, r.itemCtx = nil, requestContext{} // r holds more than its item now
	r.chunks = append(r.chunks, o.chunks...)
	r.counts = append(r.counts, o.counts...)
	r.items += o.items
	r.bytes += o.bytes
}

func (r *wireRequest) split(maxSize int, bySize bool, size func([]byte, int) int) ([]xexporterhelper.Request, error) {
	var (
		res     []xexporterhelper.Request
		dropped int
		errs    []error
	)
	cur := newWireRequest(r.sig)
	curSize := 0
	flush := func() {
		if len(cur.chunks) > 0 {
			res = append(res, cur)
		}
		cur = newWireRequest(r.sig)
		curSize = 0
	}
	for i, chunk := range r.chunks {
		n := r.counts[i]
		if s := size(chunk, n); curSize+s <= maxSize {
			cur.add(chunk, n)
			curSize += s
			continue
		}
		d, err := r.sig.decode(chunk)
		if err != nil {
			errs = append(errs, fmt.Errorf("otlp_http_wire: splitting a %s request: %w", r.sig.name, err))
			dropped += n
			continue
		}
		total := d.items()
		for from := 0; from < total; {
			room := maxSize - curSize
			to, piece, err := fill(d, from, room, bySize)
			if err != nil {
				return nil, err
			}
			if to == from { // nothing fits in what is left of cur
				if len(cur.chunks) > 0 {
					flush()
					continue
				}
				// a single item larger than maxSize: upstream drops it too
				dropped++
				from++
				continue
			}
			cur.add(piece, to-from)
			curSize += size(piece, to-from)
			if to < total {
				flush()
			}
			from = to
		}
	}
	flush()
	if dropped > 0 {
		errs = append(errs, fmt.Errorf("otlp_http_wire: %d %s larger than the batch max_size %d, dropped", dropped, r.sig.unit, maxSize))
	}
	return res, errors.Join(errs...)
}

// fill encodes items [from, to) of d with to as large as fits in room.
func fill(d decoded, from, room int, bySize bool) (int, []byte, error) {
	total := d.items()
	if !bySize {
		to := min(total, from+room)
		if to == from {
			return from, nil, nil
		}
		b, err := d.encodeRange(from, to)
		return to, b, err
	}
	// Bytes: start from the average item size and shrink until it fits.
	left := total - from
	est := d.encodedLen()
	k := left
	if est > 0 {
		k = max(1, min(left, int(int64(room)*int64(total)/int64(est))))
	}
	for k > 0 {
		b, err := d.encodeRange(from, from+k)
		if err != nil {
			return from, nil, err
		}
		if len(b) <= room {
			return from + k, b, nil
		}
		if k == 1 {
			break
		}
		nk := int(int64(k) * int64(room) / int64(len(b)))
		if nk >= k {
			nk = k - 1
		}
		k = max(1, nk)
	}
	return from, nil, nil
}
