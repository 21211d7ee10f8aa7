// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// With fsync, removing a segment is made durable too (the directory is
// synced), as creating one is: otherwise a node crash can bring a reclaimed
// segment back while the segment holding the deletes that emptied it is
// gone, and delivered items are delivered again.
func TestFsyncSyncsDirectoryAfterSegmentRemoval(t *testing.T) {
	o, _ := testOptions(64 << 10)
	o.fsync = true
	syncs := 0
	o.syncDir = func(dir string) error { syncs++; return syncDir(dir) }
	s := openTest(t, t.TempDir(), o)
	defer s.Close(ctx)
	for i := range 30 { // 10 KiB items, six per segment: five segments
		mustBatch(t, s, storage.SetOperation(strconv.Itoa(i), item(i, 10<<10)))
	}
	segs, before := len(s.segs), syncs
	for i := range 12 {
		mustBatch(t, s, storage.DeleteOperation(strconv.Itoa(i)))
	}
	if len(s.segs) >= segs {
		t.Fatalf("%d segments after deleting the first two segments' items, had %d", len(s.segs), segs)
	}
	if syncs == before {
		t.Errorf("%d segments removed with fsync: true and the directory was not synced", segs-len(s.segs))
	}
}

// A batch whose fdatasync failed is reported failed, and is not applied at
// the next start either: what the caller was told is what recovery finds.
func TestFailedFdatasyncIsNotAppliedAtRestart(t *testing.T) {
	dir := t.TempDir()
	o, _ := testOptions(64 << 10)
	o.fsync = true
	fail := false
	o.fdatasync = func(f *os.File) error {
		if fail {
			fail = false
			return errors.New("EIO")
		}
		return f.Sync()
	}
	s := openTest(t, dir, o)
	mustBatch(t, s, storage.SetOperation("qmv0", []byte("1")), storage.SetOperation("1", item(1, 3000)))
	fail = true
	if err := s.Batch(ctx, storage.SetOperation("qmv0", []byte("2")), storage.SetOperation("2", item(2, 100))); err == nil {
		t.Fatal("a batch whose fdatasync failed was reported written")
	}
	expectValue(t, s, "2", nil)
	s.Close(ctx)
	o.fdatasync = nil
	r := openTest(t, dir, o)
	defer r.Close(ctx)
	expectValue(t, r, "2", nil)
	expectValue(t, r, "qmv0", []byte("1"))
	expectValue(t, r, "1", item(1, 3000))
	if r.tornTails != 0 || r.corruptSegments != 0 {
		t.Errorf("%d torn tails, %d corrupt segments after the failed batch, want none", r.tornTails, r.corruptSegments)
	}
}
