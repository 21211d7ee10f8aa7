package queuestorageextension

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

func TestSizeClass(t *testing.T) {
	for _, n := range []int{1, 4096, pooledFrom, pooledFrom + 1, 100 << 10, 1<<20 - 1, 1 << 20, 1<<20 + 1, 1_100_000, 8 << 20, 8<<20 + 3} {
		c := sizeClass(n)
		if c < n || c < pooledFrom {
			t.Errorf("sizeClass(%d) = %d: smaller than asked for or than %d", n, c, pooledFrom)
		}
		if n > pooledFrom && c-n > n/8 {
			t.Errorf("sizeClass(%d) = %d: %d bytes more, over an eighth", n, c, c-n)
		}
		if sizeClass(c) != c {
			t.Errorf("sizeClass(%d) = %d, whose own class is %d: a class must be its own class", n, c, sizeClass(c))
		}
	}
}

func TestReadPoolReusesByClassWithinItsBound(t *testing.T) {
	p := newReadPool(3 << 20)
	a := p.get(1_000_000)
	if len(a) != 1_000_000 || cap(a) != sizeClass(1_000_000) {
		t.Fatalf("get: len %d cap %d", len(a), cap(a))
	}
	p.put(a)
	if b := p.get(1_010_000); unsafe.SliceData(b) != unsafe.SliceData(a) || len(b) != 1_010_000 {
		t.Errorf("a value of the same class did not get the idle buffer")
	} else {
		p.put(b)
	}
	if c := p.get(600_000); unsafe.SliceData(c) == unsafe.SliceData(a) {
		t.Errorf("a value of another class got the idle buffer")
	}
	for range 5 {
		p.put(make([]byte, 0, sizeClass(1_000_000)))
	}
	if idle := p.idleBytes(); idle > 3<<20 {
		t.Errorf("%d bytes idle, over the 3 MiB bound", idle)
	}
	p.put(make([]byte, 0, 4<<20))
	p.put(make([]byte, 0, 1_000_001)) // not a class: not from get
	if idle := p.idleBytes(); idle > 3<<20 || idle != 3*sizeClass(1_000_000) {
		t.Errorf("%d bytes idle; want the three most recent 1 MB buffers", idle)
	}
	if newReadPool(0) != nil {
		t.Errorf("a pool with no room")
	}
	var none *readPool
	if b := none.get(100 << 10); len(b) != 100<<10 {
		t.Errorf("no pool: get gave %d bytes", len(b))
	}
	none.put(a)
}

// The persistent queue's use of a client: a value read back stays intact
// until its key is deleted, whatever is read back meanwhile, and its buffer
// then carries the next value read back.
func TestReadBackBufferLentUntilDelete(t *testing.T) {
	o, _ := testOptions(t, 4<<20)
	o.cache = nil
	s := openTest(t, t.TempDir(), o)
	defer s.Close(ctx)
	const n = 100 << 10
	for i := range 4 {
		mustBatch(t, s, storage.SetOperation(fmt.Sprint(i), item(i, n)))
	}
	v0, _ := s.Get(ctx, "0")
	v1, _ := s.Get(ctx, "1")
	again, _ := s.Get(ctx, "1") // read twice before its delete: its own buffer
	mustBatch(t, s, storage.DeleteOperation("1"))
	v2, _ := s.Get(ctx, "2")
	if unsafe.SliceData(v2) != unsafe.SliceData(v1) {
		t.Errorf("the buffer of a deleted key was not reused for the next value read back")
	}
	if unsafe.SliceData(again) == unsafe.SliceData(v1) {
		t.Errorf("a second read of a lent key shared the first one's buffer")
	}
	v3, _ := s.Get(ctx, "3")
	for i, v := range [][]byte{v0, again, v2, v3} {
		want := item([]int{0, 1, 2, 3}[i], n)
		if string(v) != string(want) {
			t.Errorf("value %d changed while its key was alive", i)
		}
	}

	// A get and a delete of the same key in one batch: the caller keeps it.
	mustBatch(t, s, storage.SetOperation("5", item(5, n)))
	get := storage.GetOperation("5")
	mustBatch(t, s, get, storage.DeleteOperation("5"))
	mustBatch(t, s, storage.SetOperation("4", item(4, n)))
	expectValue(t, s, "4", item(4, n))
	if string(get.Value) != string(item(5, n)) {
		t.Errorf("a value read in the batch that deleted its key was reused")
	}
}

// At start the persistent queue offers the items it found dispatched again,
// under new keys, with the bytes it read; the cache keeps such a value by
// reference, so its buffer must not be reused when the old key is deleted.
func TestReadBackBufferSetUnderAnotherKeyIsNotReused(t *testing.T) {
	o, _ := testOptions(t, 4<<20)
	const n = 100 << 10
	o.cache = &cacheBudget{max: n + n/2}
	s := openTest(t, t.TempDir(), o)
	defer s.Close(ctx)
	mustBatch(t, s, storage.SetOperation("1", item(1, n))) // cached
	mustBatch(t, s, storage.SetOperation("2", item(2, n))) // on disk only
	v2, _ := s.Get(ctx, "2")                               // lent
	mustBatch(t, s, storage.DeleteOperation("1"))          // room in the cache
	mustBatch(t, s, storage.SetOperation("9", v2))         // cached by reference
	mustBatch(t, s, storage.DeleteOperation("2"))          // must not free v2's buffer
	mustBatch(t, s, storage.SetOperation("3", item(3, n))) // on disk only
	expectValue(t, s, "3", item(3, n))                     // read back into a pooled buffer
	expectValue(t, s, "9", item(2, n))
}

// Compaction moves a long-lived value forward; its key does not change, so
// the value its reader holds is not taken back.
func TestReadBackBufferSurvivesCompaction(t *testing.T) {
	const seg = 256 << 10
	o, _ := testOptions(t, seg)
	o.cache = nil
	s := openTest(t, t.TempDir(), o)
	defer s.Close(ctx)
	mustBatch(t, s, storage.SetOperation("straggler", item(7, 40<<10)))
	held, _ := s.Get(ctx, "straggler")
	first := s.segs[0].id
	for i := range 200 {
		k := fmt.Sprint(i)
		mustBatch(t, s, storage.SetOperation(k, item(i, 40<<10)))
		expectValue(t, s, k, item(i, 40<<10))
		mustBatch(t, s, storage.DeleteOperation(k))
	}
	if s.segs[0].id == first {
		t.Fatalf("the straggler's segment was never compacted: the test does not test")
	}
	if string(held) != string(item(7, 40<<10)) {
		t.Errorf("the value read before compaction was overwritten")
	}
	expectValue(t, s, "straggler", item(7, 40<<10))
}

// Consumers read, hold and delete items while a producer writes, as the
// persistent queue's consumers do; every value must stay intact until its
// delete. Run with -race as well.
func TestReadBackBuffersUnderConcurrentQueueTraffic(t *testing.T) {
	o, _ := testOptions(t, 1<<20)
	o.cache = &cacheBudget{max: 256 << 10}
	s := openTest(t, t.TempDir(), o)
	defer s.Close(ctx)
	const items, consumers = 600, 8
	keys := make(chan int, items)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(keys)
		for i := range items {
			mustBatch(t, s, storage.SetOperation("qmv0", item(i, 16)), storage.SetOperation(fmt.Sprint(i), item(i, 32<<10+rand.IntN(64<<10))))
			keys <- i
		}
	})
	for range consumers {
		wg.Go(func() {
			for i := range keys {
				k := fmt.Sprint(i)
				get := storage.GetOperation(k)
				if err := s.Batch(ctx, storage.SetOperation("qmv0", item(i, 16)), get); err != nil {
					t.Error(err)
					return
				}
				held := get.Value
				for range 3 { // others read and delete meanwhile
					time.Sleep(100 * time.Microsecond)
					for j := range held {
						if held[j] != byte(i) {
							t.Errorf("item %d changed at byte %d before its delete", i, j)
							return
						}
					}
				}
				if err := s.Batch(ctx, storage.SetOperation("qmv0", item(i, 16)), storage.DeleteOperation(k)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(s.lent) != 0 {
		t.Errorf("%d buffers still lent after every key was deleted", len(s.lent))
	}
}
