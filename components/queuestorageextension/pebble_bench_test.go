// SPDX-License-Identifier: Apache-2.0

//go:build storagebench

package queuestorageextension

// Issue 15's candidate "a well-kept embedded store with a sequential WAL behind
// storage.Client": pebble, measured in BenchmarkQueueTraffic beside
// queue_storage and file_storage. Behind the storagebench tag so that neither
// the binary nor `make test` compiles pebble:
//
//	go test -tags storagebench ./components/queuestorageextension -run '^$' -bench QueueTraffic -benchtime 2000x

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

func init() {
	trafficCases = append(trafficCases,
		trafficCase{"pebble", pebbleCase(pebble.NoSync, pebble.Options{})},
		trafficCase{"pebble_nocompress", pebbleCase(pebble.NoSync, noCompression())},
		trafficCase{"pebble_memtable64m", pebbleCase(pebble.NoSync, pebble.Options{MemTableSize: 64 << 20})},
		trafficCase{"pebble_sync", pebbleCase(pebble.Sync, pebble.Options{})},
	)
}

// pebbleCase opens pebble with o: its defaults, its sstables not compressed
// (the default compresses them with snappy: smaller flushes, dearer reads of
// flushed items), or a 64 MiB memtable instead of 4 MiB (an item deleted
// before its memtable is flushed is never written to an sstable; the queue's
// backlog decides whether that holds).
func pebbleCase(wo *pebble.WriteOptions, o pebble.Options) func(b *testing.B) storage.Client {
	return func(b *testing.B) storage.Client {
		c, err := openPebble(b.TempDir(), wo, o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close(ctx) })
		return c
	}
}

// pebbleClient is a storage.Client on one pebble database with its default
// options: each Batch is one pebble batch (atomic, one WAL record) committed
// with wo (NoSync: in the page cache before Batch returns, as queue_storage
// and file_storage without fsync; Sync: fdatasync of the WAL).
type pebbleClient struct {
	db *pebble.DB
	wo *pebble.WriteOptions
}

func noCompression() pebble.Options {
	var o pebble.Options
	o.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	return o
}

func openPebble(dir string, wo *pebble.WriteOptions, o pebble.Options) (*pebbleClient, error) {
	o.Logger = quietLogger{}
	db, err := pebble.Open(dir, &o)
	if err != nil {
		return nil, err
	}
	return &pebbleClient{db: db, wo: wo}, nil
}

// quietLogger drops pebble's info lines ("Found 0 WALs") that would break
// the benchmark's output lines; errors still go to stderr.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (c *pebbleClient) Get(ctx context.Context, key string) ([]byte, error) {
	op := storage.GetOperation(key)
	return op.Value, c.Batch(ctx, op)
}

func (c *pebbleClient) Set(ctx context.Context, key string, value []byte) error {
	return c.Batch(ctx, storage.SetOperation(key, value))
}

func (c *pebbleClient) Delete(ctx context.Context, key string) error {
	return c.Batch(ctx, storage.DeleteOperation(key))
}

// Batch applies ops in order. A batch with a Get is an indexed batch so that
// the Get sees the batch's earlier Sets and Deletes, as the other stores do.
func (c *pebbleClient) Batch(_ context.Context, ops ...*storage.Operation) error {
	indexed := false
	for _, op := range ops {
		indexed = indexed || op.Type == storage.Get
	}
	var b *pebble.Batch
	if indexed {
		b = c.db.NewIndexedBatch()
	} else {
		b = c.db.NewBatch()
	}
	defer b.Close()
	for _, op := range ops {
		var err error
		switch op.Type {
		case storage.Get:
			op.Value, err = pebbleGet(b, op.Key)
		case storage.Set:
			err = b.Set([]byte(op.Key), op.Value, nil)
		case storage.Delete:
			err = b.Delete([]byte(op.Key), nil)
		default:
			err = errors.New("wrong operation type")
		}
		if err != nil {
			return err
		}
	}
	if b.Empty() {
		return nil
	}
	return b.Commit(c.wo)
}

// pebbleGet copies the value out: pebble's slice is valid only until closed.
func pebbleGet(b *pebble.Batch, key string) ([]byte, error) {
	v, closer, err := b.Get([]byte(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return append([]byte{}, v...), nil
}

func (c *pebbleClient) Close(context.Context) error {
	if c.db == nil {
		return nil
	}
	db := c.db
	c.db = nil
	return db.Close()
}

// TestPebbleBatchSemantics checks that the pebble client answers as the other
// stores do, so that the benchmark compares like with like.
func TestPebbleBatchSemantics(t *testing.T) {
	c, err := openPebble(t.TempDir(), pebble.NoSync, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if v, err := c.Get(ctx, "missing"); v != nil || err != nil {
		t.Fatalf("missing key: %q, %v; want nil, nil", v, err)
	}
	get := storage.GetOperation("a")
	if err := c.Batch(ctx, storage.SetOperation("a", []byte("1")), get, storage.SetOperation("b", []byte("2"))); err != nil {
		t.Fatal(err)
	}
	if string(get.Value) != "1" {
		t.Errorf("get after set in the same batch: %q, want 1", get.Value)
	}
	before, after := storage.GetOperation("a"), storage.GetOperation("a")
	if err := c.Batch(ctx, before, storage.DeleteOperation("a"), after); err != nil {
		t.Fatal(err)
	}
	if string(before.Value) != "1" || after.Value != nil {
		t.Errorf("get around a delete in the same batch: %q, %q; want 1, nil", before.Value, after.Value)
	}
	if v, err := c.Get(ctx, "b"); string(v) != "2" || err != nil {
		t.Errorf("get b: %q, %v; want 2", v, err)
	}
}
