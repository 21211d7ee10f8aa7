// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

var ctx = context.Background()

func testOptions(segmentSize int64) (storeOptions, *observer.ObservedLogs) {
	core, logs := observer.New(zap.InfoLevel)
	return storeOptions{segmentSize: segmentSize, reserve: 4 << 10, cache: &cacheBudget{max: 1 << 20}, logger: zap.New(core)}, logs
}

func openTest(t *testing.T, dir string, o storeOptions) *store {
	t.Helper()
	s, err := openStore(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func item(i int, n int) []byte { return bytes.Repeat([]byte{byte(i)}, n) }

func mustBatch(t *testing.T, s *store, ops ...*storage.Operation) {
	t.Helper()
	if err := s.Batch(ctx, ops...); err != nil {
		t.Fatal(err)
	}
}

func expectValue(t *testing.T, s *store, key string, want []byte) {
	t.Helper()
	got, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("get %q: %d bytes %.8x..., want %d bytes %.8x...", key, len(got), got, len(want), want)
	}
}

func TestBatchSemantics(t *testing.T) {
	o, _ := testOptions(64 << 10)
	s := openTest(t, t.TempDir(), o)
	defer s.Close(ctx)
	if v, err := s.Get(ctx, "missing"); v != nil || err != nil {
		t.Fatalf("missing key: %q, %v; want nil, nil", v, err)
	}
	get := storage.GetOperation("a")
	mustBatch(t, s, storage.SetOperation("a", []byte("1")), get, storage.SetOperation("b", []byte("2")))
	if string(get.Value) != "1" {
		t.Errorf("get after set in the same batch: %q, want 1", get.Value)
	}
	before := storage.GetOperation("a")
	mustBatch(t, s, before, storage.DeleteOperation("a"), storage.GetOperation("b"))
	if string(before.Value) != "1" {
		t.Errorf("get before delete in the same batch: %q, want 1", before.Value)
	}
	expectValue(t, s, "a", nil)
	expectValue(t, s, "b", []byte("2"))
	if err := s.Set(ctx, "b", nil); err != nil {
		t.Fatal(err)
	}
	expectValue(t, s, "b", []byte{})
	s.Close(ctx)
	if err := s.Set(ctx, "c", nil); !errors.Is(err, errClosed) {
		t.Errorf("set after close: %v, want %v", err, errClosed)
	}
}

// Values are served from disk once the memory cache is spent, and after a
// restart; both give the same bytes.
func TestReopenAndUncachedValues(t *testing.T) {
	dir := t.TempDir()
	o, _ := testOptions(64 << 10)
	o.cache = &cacheBudget{max: 10 << 10}
	s := openTest(t, dir, o)
	for i := range 50 {
		mustBatch(t, s, storage.SetOperation("qmv0", []byte(strconv.Itoa(i))), storage.SetOperation(strconv.Itoa(i), item(i, 3000)))
	}
	for i := 0; i < 50; i += 2 {
		mustBatch(t, s, storage.DeleteOperation(strconv.Itoa(i)))
	}
	for i := range 50 {
		want := item(i, 3000)
		if i%2 == 0 {
			want = nil
		}
		expectValue(t, s, strconv.Itoa(i), want)
	}
	if s.opts.cache.used.Load() > 10<<10 {
		t.Errorf("cache holds %d bytes, over its 10 KiB budget", s.opts.cache.used.Load())
	}
	s.Close(ctx)
	if s.opts.cache.used.Load() != 0 {
		t.Errorf("cache holds %d bytes after close", s.opts.cache.used.Load())
	}
	s = openTest(t, dir, o)
	defer s.Close(ctx)
	for i := range 50 {
		want := item(i, 3000)
		if i%2 == 0 {
			want = nil
		}
		expectValue(t, s, strconv.Itoa(i), want)
	}
	expectValue(t, s, "qmv0", []byte("49"))
}

func TestSecondClientOnSameDirectoryIsRefused(t *testing.T) {
	dir := t.TempDir()
	o, _ := testOptions(64 << 10)
	s := openTest(t, dir, o)
	defer s.Close(ctx)
	if _, err := openStore(dir, o); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open of %s: %v, want an in-use error", dir, err)
	}
}

// A crash tears the last record at any byte: recovery drops that record (never
// acknowledged), keeps every earlier one, and says so once.
func TestTornTailIsDropped(t *testing.T) {
	src := t.TempDir()
	o, _ := testOptions(64 << 10)
	s := openTest(t, src, o)
	for i := range 5 {
		mustBatch(t, s, storage.SetOperation("qmv0", []byte(strconv.Itoa(i))), storage.SetOperation(strconv.Itoa(i), item(i, 100)))
	}
	seg := s.segs[len(s.segs)-1]
	lastStart := seg.end
	mustBatch(t, s, storage.SetOperation("qmv0", []byte("5")), storage.SetOperation("5", item(5, 100)))
	lastEnd := seg.end
	s.Close(ctx)
	full, err := os.ReadFile(seg.path)
	if err != nil {
		t.Fatal(err)
	}
	for cut := lastStart + 1; cut < lastEnd; cut += 7 {
		dir := t.TempDir()
		torn := append([]byte(nil), full...)
		clear(torn[cut:lastEnd])
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(seg.path)), torn, 0o600); err != nil {
			t.Fatal(err)
		}
		o, logs := testOptions(64 << 10)
		r := openTest(t, dir, o)
		if r.tornTails != 1 || logs.FilterMessageSnippet("torn record").Len() != 1 {
			t.Errorf("cut at %d: %d torn tails, logs %v; want 1", cut, r.tornTails, logs.All())
		}
		for i := range 5 {
			expectValue(t, r, strconv.Itoa(i), item(i, 100))
		}
		expectValue(t, r, "5", nil)
		expectValue(t, r, "qmv0", []byte("4"))
		mustBatch(t, r, storage.SetOperation("after", []byte("restart")))
		r.Close(ctx)
		// The torn record was erased: the next recovery finds nothing to drop.
		r = openTest(t, dir, o)
		if r.tornTails != 0 || r.corruptSegments != 0 {
			t.Errorf("cut at %d, second restart: %d torn tails, %d corrupt segments; want none", cut, r.tornTails, r.corruptSegments)
		}
		expectValue(t, r, "after", []byte("restart"))
		r.Close(ctx)
	}
}

// A damaged byte in an older segment: a clear error naming the segment, its
// records from there on are lost, every other segment is recovered.
func TestCorruptSegment(t *testing.T) {
	dir := t.TempDir()
	o, _ := testOptions(64 << 10)
	s := openTest(t, dir, o)
	const n = 60 // 10 KiB items, six per segment: ten segments
	for i := range n {
		mustBatch(t, s, storage.SetOperation(strconv.Itoa(i), item(i, 10<<10)))
	}
	where := map[string]uint64{}
	for k, e := range s.index {
		where[k] = e.seg.id
	}
	victim := s.segs[3]
	s.Close(ctx)
	raw, err := os.ReadFile(victim.path)
	if err != nil {
		t.Fatal(err)
	}
	raw[20] ^= 0xff // inside the first record's value
	if err := os.WriteFile(victim.path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	o, logs := testOptions(64 << 10)
	r := openTest(t, dir, o)
	defer r.Close(ctx)
	if r.corruptSegments != 1 {
		t.Errorf("%d corrupt segments reported, want 1", r.corruptSegments)
	}
	errs := logs.FilterMessageSnippet("segment is corrupted").All()
	if len(errs) != 1 || errs[0].ContextMap()["segment"] != victim.path || errs[0].Level != zap.ErrorLevel {
		t.Errorf("want one error naming %s, got %v", victim.path, logs.All())
	}
	lost := 0
	for i := range n {
		k := strconv.Itoa(i)
		v, _ := r.Get(ctx, k)
		switch {
		case where[k] == victim.id:
			lost++
		case !bytes.Equal(v, item(i, 10<<10)):
			t.Errorf("key %s in intact segment %d not recovered", k, where[k])
		}
	}
	if lost == 0 {
		t.Errorf("no key in the corrupted segment")
	}
}

// Queue-shaped churn with a straggler that stays alive for a long time: disk
// use stays within twice the live data plus two segments, and the files on
// disk are the segments the store knows.
func TestDiskBoundedUnderChurn(t *testing.T) {
	dir := t.TempDir()
	const seg = 64 << 10
	o, _ := testOptions(seg)
	s := openTest(t, dir, o)
	defer s.Close(ctx)
	mustBatch(t, s, storage.SetOperation("straggler", item(1, 1000)))
	var maxDisk int64
	for i := range 5000 {
		k := strconv.Itoa(i)
		mustBatch(t, s, storage.SetOperation("qmv0", item(i, 40)), storage.SetOperation(k, item(i, 2000)))
		if i >= 20 {
			mustBatch(t, s, storage.SetOperation("qmv0", item(i, 40)), storage.DeleteOperation(strconv.Itoa(i-20)))
		}
		live, disk, _ := s.usage()
		maxDisk = max(maxDisk, disk)
		if bound := 2*live + 2*seg + seg; disk > bound {
			t.Fatalf("after %d items: %d bytes of segments for %d live bytes (bound %d)", i, disk, live, bound)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if _, _, n := s.usage(); len(files) != n {
		t.Errorf("%d segment files on disk, the store knows %d", len(files), n)
	}
	expectValue(t, s, "straggler", item(1, 1000))
	t.Logf("10 MB written through 64 KiB segments: at most %d KiB of segments, %d files at the end", maxDisk>>10, len(files))
}

// On a full volume new keys are refused with ErrVolumeFull, while updates and
// deletes (the queue's metadata and finished items) still go through, nothing
// acknowledged is lost, and room comes back as items are deleted.
func TestVolumeFull(t *testing.T) {
	vol := tmpfs(t, "1m")
	o, _ := testOptions(64 << 10)
	s := openTest(t, vol, o)
	acked := 0
	var err error
	for ; acked < 1000; acked++ {
		err = s.Batch(ctx, storage.SetOperation("qmv0", []byte(strconv.Itoa(acked))), storage.SetOperation(strconv.Itoa(acked), item(acked, 5000)))
		if err != nil {
			break
		}
	}
	if !errors.Is(err, ErrVolumeFull) || !strings.Contains(err.Error(), "queue volume full") {
		t.Fatalf("after %d items on a 1 MiB volume: %v, want ErrVolumeFull", acked, err)
	}
	t.Logf("1 MiB volume: %d items of 5000 bytes acknowledged, then: %v", acked, err)
	// The queue keeps dispatching: metadata updates and deletes succeed.
	for i := range 10 {
		mustBatch(t, s, storage.SetOperation("qmv0", []byte("dispatching")), storage.GetOperation(strconv.Itoa(i)))
		mustBatch(t, s, storage.SetOperation("qmv0", []byte("done")), storage.DeleteOperation(strconv.Itoa(i)))
	}
	s.Close(ctx)
	s = openTest(t, vol, o)
	defer s.Close(ctx)
	for i := 10; i < acked; i++ {
		expectValue(t, s, strconv.Itoa(i), item(i, 5000))
	}
	expectValue(t, s, "qmv0", []byte("done"))
	// Deleting everything frees the volume for new items.
	for i := 10; i < acked; i++ {
		mustBatch(t, s, storage.SetOperation("qmv0", []byte("done")), storage.DeleteOperation(strconv.Itoa(i)))
	}
	mustBatch(t, s, storage.SetOperation("qmv0", []byte("new")), storage.SetOperation("new", item(7, 5000)))
}

// At start upstream's persistent queue gets the items it found dispatched, deletes
// them in a batch of their own, and only then offers their bytes again under new
// keys (exporterhelper v0.165.0, enqueueNotDispatchedReqs): a value must stay
// valid after its key is deleted. A store that reused the buffer of a deleted
// key's value (a read-back pool) lost records in the kill -9 scenario
// this way; this is that sequence, with reads from disk in between.
func TestValueOutlivesItsKey(t *testing.T) {
	o, _ := testOptions(4 << 20)
	const n = 100 << 10
	o.cache = &cacheBudget{max: 3 * n}
	s := openTest(t, t.TempDir(), o)
	defer s.Close(ctx)
	for i := range 8 {
		mustBatch(t, s, storage.SetOperation(strconv.Itoa(i), item(i, n)))
	}
	// Items 0-2 took the cache; once delivered, the re-offered ones take it.
	mustBatch(t, s, storage.DeleteOperation("0"), storage.DeleteOperation("1"), storage.DeleteOperation("2"))
	gets := []*storage.Operation{storage.GetOperation("5"), storage.GetOperation("6"), storage.GetOperation("7")}
	mustBatch(t, s, gets...)
	mustBatch(t, s, storage.DeleteOperation("5"), storage.DeleteOperation("6"), storage.DeleteOperation("7"))
	for i, g := range gets {
		mustBatch(t, s, storage.SetOperation(strconv.Itoa(10+i), g.Value))
	}
	expectValue(t, s, "3", item(3, n)) // read back from disk meanwhile
	expectValue(t, s, "4", item(4, n))
	for i := range 3 {
		expectValue(t, s, strconv.Itoa(10+i), item(5+i, n))
	}
}

// Corruption in the middle of the newest segment, with valid records after
// it, is not a torn tail (a crash tears only the last bytes written): it is
// reported as corruption, the records after it are kept, and the log says
// what was lost.
func TestCorruptionInNewestSegmentIsNotATornTail(t *testing.T) {
	dir := t.TempDir()
	o, _ := testOptions(1 << 20)
	s := openTest(t, dir, o)
	var offs []int64
	seg := s.segs[len(s.segs)-1]
	for i := range 10 {
		offs = append(offs, seg.end)
		mustBatch(t, s, storage.SetOperation("qmv0", []byte(strconv.Itoa(i))), storage.SetOperation(strconv.Itoa(i), item(i, 1000)))
	}
	s.Close(ctx)
	raw, err := os.ReadFile(seg.path)
	if err != nil {
		t.Fatal(err)
	}
	raw[offs[3]+500] ^= 0xff // inside record 3's value
	if err := os.WriteFile(seg.path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	o, logs := testOptions(1 << 20)
	r := openTest(t, dir, o)
	defer r.Close(ctx)
	if r.tornTails != 0 || r.corruptSegments != 1 {
		t.Errorf("%d torn tails, %d corrupt segments; want 0 and 1", r.tornTails, r.corruptSegments)
	}
	if n := logs.FilterMessageSnippet("never acknowledged").Len(); n != 0 {
		t.Errorf("corruption followed by valid records reported as a write that was never acknowledged: %v", logs.All())
	}
	errs := logs.FilterMessageSnippet("corrupted").All()
	if len(errs) != 1 || errs[0].ContextMap()["offset"] != offs[3] || errs[0].ContextMap()["bytes_lost"] != offs[4]-offs[3] {
		t.Errorf("want one error naming offset %d and the %d bytes of the damaged record, got %v", offs[3], offs[4]-offs[3], logs.All())
	}
	for i := range 10 {
		want := item(i, 1000)
		if i == 3 {
			want = nil
		}
		expectValue(t, r, strconv.Itoa(i), want)
	}
	expectValue(t, r, "qmv0", []byte("9"))
}
