// SPDX-License-Identifier: Apache-2.0

package durablequeueprocessor // import "github.com/otelcol-relay/otelcol-relay/components/durablequeueprocessor"

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// Keys in the storage client. Items are numbered in arrival order; firstKey
// and nextKey bound the numbers that may still be stored, so a restart finds
// every item without listing keys (storage.Client cannot).
const (
	firstKey = "first"
	nextKey  = "next"
)

// itemKey holds the request (OTLP protobuf), sizeKey its record count and
// encoded size, so a restart knows the queue's size without reading or
// decoding the requests.
func itemKey(seq uint64) string { return "item/" + strconv.FormatUint(seq, 10) }
func sizeKey(seq uint64) string { return "size/" + strconv.FormatUint(seq, 10) }

func encodeSize(items int, bytes int64) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(nil, uint64(items)), uint64(bytes))
}

func decodeSize(b []byte) (items int, bytes int64, ok bool) {
	i, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, 0, false
	}
	by, m := binary.Uvarint(b[n:])
	if m <= 0 || n+m != len(b) {
		return 0, 0, false
	}
	return int(i), int64(by), true
}

// ErrFull is returned (retryable) when a request does not fit in max_bytes.
var ErrFull = errors.New("durable_queue: full")

var errStopped = errors.New("durable_queue: shutting down")

// entry is one acknowledged request. data is set while it is also held
// decoded in memory.
type entry[T any] struct {
	seq   uint64
	bytes int64
	items int
	data  *T
	added time.Time
}

// queue persists each request before Consume returns and forwards it, merged
// with others, to next. Unlike the exporter's persistent queue it keeps the
// decoded request it was given, so a record is encoded once for durability
// and never decoded again unless the process restarts or memory_bytes is
// exceeded.
type queue[T any] struct {
	cfg    *Config
	codec  codec[T]
	next   func(context.Context, T) error
	client storage.Client
	logger *zap.Logger

	mu        sync.Mutex
	wake      chan struct{} // closed and replaced when pending grows or stop begins
	pending   []*entry[T]   // acknowledged, not yet taken by a worker, in order
	inflight  map[uint64]struct{}
	first     uint64 // lowest number that may still be stored
	nextSeq   uint64
	bytes     int64 // everything held: pending and in flight
	items     int64
	memBytes  int64
	pendItems int
	stopped   bool

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newQueue[T any](cfg *Config, c codec[T], next func(context.Context, T) error, logger *zap.Logger) *queue[T] {
	return &queue[T]{cfg: cfg, codec: c, next: next, logger: logger,
		wake: make(chan struct{}), inflight: map[uint64]struct{}{}}
}

// start recovers what a previous process left in client and starts the workers.
func (q *queue[T]) start(client storage.Client) error {
	q.client = client
	ctx := context.Background()
	first, err := q.readCounter(ctx, firstKey)
	if err != nil {
		return err
	}
	next, err := q.readCounter(ctx, nextKey)
	if err != nil {
		return err
	}
	for seq := first; seq < next; seq++ {
		v, err := client.Get(ctx, sizeKey(seq))
		if err != nil {
			return fmt.Errorf("durable_queue: reading item %d: %w", seq, err)
		}
		if v == nil {
			continue // delivered before the restart (item and size go together)
		}
		items, bytes, ok := decodeSize(v)
		if !ok {
			return fmt.Errorf("durable_queue: item %d: its size record %x is not two numbers", seq, v)
		}
		q.pending = append(q.pending, &entry[T]{seq: seq, bytes: bytes, items: items, added: time.Now()})
		q.bytes += bytes
		q.items += int64(items)
		q.pendItems += items
	}
	q.first, q.nextSeq = first, next
	// Both counters exist from the start, so that later writes of them are
	// updates, which queue_storage takes from its reserve on a full volume:
	// deliveries can always be recorded, and free the space.
	if err := client.Batch(ctx, storage.SetOperation(firstKey, counter(first)), storage.SetOperation(nextKey, counter(next))); err != nil {
		return fmt.Errorf("durable_queue: writing its counters: %w", err)
	}
	if len(q.pending) > 0 {
		q.logger.Info("Recovered requests acknowledged before the restart",
			zap.Int("requests", len(q.pending)), zap.Int64("items", q.items), zap.Int64("bytes", q.bytes))
	}
	wctx, cancel := context.WithCancel(context.Background())
	q.cancel = cancel
	for range q.cfg.Workers {
		q.wg.Add(1)
		go func() {
			defer q.wg.Done()
			q.work(wctx)
		}()
	}
	return nil
}

func (q *queue[T]) readCounter(ctx context.Context, key string) (uint64, error) {
	v, err := q.client.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("durable_queue: reading %q: %w", key, err)
	}
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("durable_queue: %q holds %d bytes, want 8", key, len(v))
	}
	return binary.LittleEndian.Uint64(v), nil
}

func counter(n uint64) []byte { return binary.LittleEndian.AppendUint64(nil, n) }

// consume persists data and takes ownership of it: once it returns nil the
// request is on disk and will be forwarded, after a restart if need be.
func (q *queue[T]) consume(ctx context.Context, data T) error {
	items := q.codec.items(data)
	if items == 0 {
		return nil
	}
	v, err := q.codec.marshal(data)
	if err != nil {
		return consumererror.NewPermanent(fmt.Errorf("durable_queue: encoding: %w", err))
	}
	size := int64(len(v))
	if size > q.cfg.MaxBytes {
		return consumererror.NewPermanent(fmt.Errorf("durable_queue: a request of %d bytes is larger than max_bytes (%d)", size, q.cfg.MaxBytes))
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return errStopped
	}
	if q.bytes+size > q.cfg.MaxBytes {
		// Said in the log as the exporter's queue says it ("sending queue is
		// full"): the sender only sees a 503.
		q.logger.Warn("Refusing data: the queue holds max_bytes", zap.Int("records", items), zap.Int64("queued_bytes", q.bytes), zap.Int64("max_bytes", q.cfg.MaxBytes), zap.Error(ErrFull))
		return ErrFull
	}
	seq := q.nextSeq
	// One batch: the item and the counter that makes a restart look for it
	// are written together or not at all.
	if err := q.client.Batch(ctx,
		storage.SetOperation(itemKey(seq), v),
		storage.SetOperation(sizeKey(seq), encodeSize(items, size)),
		storage.SetOperation(nextKey, counter(seq+1))); err != nil {
		err = fmt.Errorf("durable_queue: storing the request: %w", err)
		q.logger.Warn("Refusing data: it could not be stored", zap.Int("records", items), zap.Error(err))
		return err
	}
	q.nextSeq++
	e := &entry[T]{seq: seq, bytes: size, items: items, added: time.Now()}
	if q.memBytes+size <= q.cfg.MemoryBytes {
		e.data = &data
		q.memBytes += size
	}
	q.pending = append(q.pending, e)
	q.bytes += size
	q.items += int64(items)
	q.pendItems += items
	q.broadcast()
	return nil
}

func (q *queue[T]) broadcast() {
	close(q.wake)
	q.wake = make(chan struct{})
}

// take waits for a batch: batch_items records, or whatever is pending once
// the oldest has waited flush_timeout. It returns nil when the queue stops.
func (q *queue[T]) take(ctx context.Context) []*entry[T] {
	for {
		q.mu.Lock()
		if q.stopped {
			q.mu.Unlock()
			return nil
		}
		var wait time.Duration = -1
		if len(q.pending) > 0 {
			wait = q.cfg.FlushTimeout - time.Since(q.pending[0].added)
			if q.pendItems >= q.cfg.BatchItems || wait <= 0 {
				batch := q.pop()
				q.mu.Unlock()
				return batch
			}
		}
		wake := q.wake
		q.mu.Unlock()
		var timer *time.Timer
		var fire <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(wait)
			fire = timer.C
		}
		select {
		case <-wake:
		case <-fire:
		case <-ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// pop takes up to batch_items records from the head (at least one request).
func (q *queue[T]) pop() []*entry[T] {
	n, items := 0, 0
	for n < len(q.pending) && (n == 0 || items+q.pending[n].items <= q.cfg.BatchItems) {
		items += q.pending[n].items
		q.inflight[q.pending[n].seq] = struct{}{}
		n++
	}
	batch := append([]*entry[T](nil), q.pending[:n]...)
	clear(q.pending[:n])
	q.pending = q.pending[n:]
	q.pendItems -= items
	return batch
}

func (q *queue[T]) work(ctx context.Context) {
	for {
		batch := q.take(ctx)
		if batch == nil {
			return
		}
		q.forward(ctx, batch)
	}
}

// forward delivers one batch and forgets it, or puts it back when the
// pipeline could not take it and the queue is not stopping.
func (q *queue[T]) forward(ctx context.Context, batch []*entry[T]) {
	merged, err := q.merge(ctx, batch)
	if err == nil {
		err = q.next(ctx, merged)
	}
	switch {
	case err == nil:
		q.done(batch)
	case consumererror.IsPermanent(err):
		items := 0
		for _, e := range batch {
			items += e.items
		}
		q.logger.Error("Dropping requests the pipeline refused permanently",
			zap.Int("requests", len(batch)), zap.Int("items", items), zap.Error(err))
		q.done(batch)
	default:
		// Stopping, or the exporter gave up (retry_on_failure with a
		// max_elapsed_time): keep it on disk, and read it back from there,
		// because the pipeline may have changed the decoded copy.
		q.requeue(batch)
		if ctx.Err() == nil {
			q.logger.Warn("Requeued requests the pipeline did not deliver", zap.Int("requests", len(batch)), zap.Error(err))
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
		}
	}
}

// merge builds one request from the batch, decoding the entries that are
// on disk only.
func (q *queue[T]) merge(ctx context.Context, batch []*entry[T]) (T, error) {
	if len(batch) == 1 && batch[0].data != nil {
		return *batch[0].data, nil
	}
	merged := q.codec.empty()
	for _, e := range batch {
		if e.data != nil {
			q.codec.moveTo(*e.data, merged)
			continue
		}
		v, err := q.client.Get(ctx, itemKey(e.seq))
		if err == nil && v == nil {
			err = errors.New("missing")
		}
		if err != nil {
			return merged, fmt.Errorf("durable_queue: reading item %d: %w", e.seq, err)
		}
		d, err := q.codec.unmarshal(v)
		if err != nil {
			return merged, consumererror.NewPermanent(fmt.Errorf("durable_queue: decoding item %d: %w", e.seq, err))
		}
		q.codec.moveTo(d, merged)
	}
	return merged, nil
}

// done deletes delivered entries and advances first past every number that
// is neither pending nor in flight.
func (q *queue[T]) done(batch []*entry[T]) {
	q.mu.Lock()
	defer q.mu.Unlock()
	ops := make([]*storage.Operation, 0, 2*len(batch)+1)
	for _, e := range batch {
		ops = append(ops, storage.DeleteOperation(itemKey(e.seq)), storage.DeleteOperation(sizeKey(e.seq)))
		delete(q.inflight, e.seq)
		q.bytes -= e.bytes
		q.items -= int64(e.items)
		if e.data != nil {
			q.memBytes -= e.bytes
		}
	}
	first := q.nextSeq
	if len(q.pending) > 0 {
		first = q.pending[0].seq
	}
	for seq := range q.inflight {
		first = min(first, seq)
	}
	if first != q.first {
		ops = append(ops, storage.SetOperation(firstKey, counter(first)))
	}
	if err := q.client.Batch(context.Background(), ops...); err != nil {
		// Delivered but still stored: sent again after a restart (at least once).
		q.logger.Error("Could not delete delivered requests", zap.Int("requests", len(batch)), zap.Error(err))
	} else {
		q.first = first
	}
	q.broadcast()
}

// requeue puts a batch back at the head, decoded copies dropped.
func (q *queue[T]) requeue(batch []*entry[T]) {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := 0
	for _, e := range batch {
		delete(q.inflight, e.seq)
		if e.data != nil {
			e.data = nil
			q.memBytes -= e.bytes
		}
		items += e.items
	}
	q.pending = append(batch, q.pending...)
	q.pendItems += items
	q.broadcast()
}

// held is what the queue holds and has not delivered: records and encoded
// bytes, pending and in flight.
func (q *queue[T]) held() (items, bytes int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.items, q.bytes
}

// shutdown stops the workers. What is not delivered stays stored and is
// forwarded by the next process on this volume.
func (q *queue[T]) shutdown(ctx context.Context) error {
	q.mu.Lock()
	q.stopped = true
	q.broadcast()
	q.mu.Unlock()
	if q.cancel != nil {
		q.cancel()
	}
	done := make(chan struct{})
	go func() { q.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if q.client == nil {
		return nil
	}
	q.mu.Lock()
	left, bytes := q.items, q.bytes
	q.mu.Unlock()
	if left > 0 {
		q.logger.Info("Requests left stored for the next start on this volume",
			zap.Int64("items", left), zap.Int64("bytes", bytes))
	}
	return q.client.Close(ctx)
}
