// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"errors"
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/otelcol-relay/otelcol-relay/internal/testvolume"
)

// The values of deleted keys offered again under new keys on a full volume are
// written as links, and a restart reads them back: the sequence upstream's
// persistent queue runs at start with items in flight.
func TestReofferedValuesSurviveRestartsOnFullVolume(t *testing.T) {
	vol := tmpfs(t, "1m")
	o, _ := testOptions(64 << 10)
	s := openTest(t, vol, o)
	n := 0
	for ; ; n++ {
		err := s.Batch(ctx, storage.SetOperation("qmv0", []byte(strconv.Itoa(n))), storage.SetOperation(strconv.Itoa(n), item(n, 5000)))
		if errors.Is(err, ErrVolumeFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	testvolume.Fill(t, vol, 0)
	got := []*storage.Operation{storage.GetOperation("0"), storage.GetOperation("1")}
	mustBatch(t, s, got...)
	mustBatch(t, s, storage.DeleteOperation("0"), storage.DeleteOperation("1"))
	for i, g := range got {
		mustBatch(t, s, storage.SetOperation("qmv0", []byte("again")), storage.SetOperation(strconv.Itoa(n+i), g.Value))
	}
	if err := s.Batch(ctx, storage.SetOperation(strconv.Itoa(n+2), item(9, 5000))); !errors.Is(err, ErrVolumeFull) {
		t.Errorf("a new value on the full volume: %v, want ErrVolumeFull", err)
	}
	for range 2 {
		s.Close(ctx)
		s = openTest(t, vol, o)
		expectValue(t, s, strconv.Itoa(n), item(0, 5000))
		expectValue(t, s, strconv.Itoa(n+1), item(1, 5000))
		expectValue(t, s, "0", nil)
	}
	for i := 2; i < n+2; i++ {
		mustBatch(t, s, storage.SetOperation("qmv0", []byte("done")), storage.DeleteOperation(strconv.Itoa(i)))
	}
	s.Close(ctx)
	if live, err := Inspect(vol); err != nil || len(live) != 1 {
		t.Errorf("after deleting everything: %v keys, %v; want only qmv0", live, err)
	}
}
