// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/otelcol-relay/otelcol-relay/components/internal/handoff"
)

// Values are the store's own, as with file_storage (bbolt copies both ways): a
// caller that reuses the buffer it passed to Set, or writes into the slice Get
// returned, does not change what is stored. From a metadata's size to a
// queue item's.
func TestValuesAreNotSharedWithCallers(t *testing.T) {
	for _, n := range []int{100, 4 << 10, 110 << 10} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			o, _ := testOptions(1 << 20)
			s := openTest(t, t.TempDir(), o)
			defer s.Close(ctx)
			buf := item(1, n)
			mustBatch(t, s, storage.SetOperation("qmv0", []byte("m")), storage.SetOperation("k", buf))
			clear(buf) // the caller's marshal buffer, reused
			expectValue(t, s, "k", item(1, n))

			got, err := s.Get(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			clear(got) // the caller writes into what it read
			expectValue(t, s, "k", item(1, n))

			get := storage.GetOperation("k")
			mustBatch(t, s, storage.SetOperation("qmv0", []byte("m")), get)
			clear(get.Value)
			expectValue(t, s, "k", item(1, n))
		})
	}
}

// A value its caller handed off (components/internal/handoff) is kept as it
// is, and Get returns that slice; one that was not given is still copied,
// even when another was given at the same time. The store that stored it
// after a restart serves what the segment holds.
func TestHandedOffValuesAreKeptUncopied(t *testing.T) {
	var reg handoff.Registry
	o, _ := testOptions(1 << 20)
	o.handoff = &reg
	dir := t.TempDir()
	s := openTest(t, dir, o)
	given, kept := item(1, 4<<10), item(2, 4<<10)
	reg.Give(given)
	mustBatch(t, s, storage.SetOperation("given", given), storage.SetOperation("kept", kept))
	clear(kept)
	got, err := s.Get(ctx, "given")
	if err != nil {
		t.Fatal(err)
	}
	if &got[0] != &given[0] {
		t.Error("a value handed off was copied")
	}
	expectValue(t, s, "kept", item(2, 4<<10))
	if reg.Claim(given) {
		t.Error("the store left the value it took over claimable")
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, o)
	defer s.Close(ctx)
	expectValue(t, s, "given", item(1, 4<<10))
}
