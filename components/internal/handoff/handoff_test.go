// SPDX-License-Identifier: Apache-2.0

package handoff

import "testing"

func TestClaimTakesOnlyTheSliceGiven(t *testing.T) {
	var r Registry
	b := make([]byte, 100)
	other := make([]byte, 100)
	r.Give(b)
	if r.Claim(other) {
		t.Fatal("a slice that was not given was claimed")
	}
	if r.Claim(b[:50]) || r.Claim(b[1:]) {
		t.Fatal("part of a given slice was claimed as the slice")
	}
	if !r.Claim(b) {
		t.Fatal("the given slice was not claimed")
	}
	if r.Claim(b) {
		t.Fatal("a slice given once was claimed twice")
	}
}

func TestNilAndEmpty(t *testing.T) {
	var r *Registry
	r.Give([]byte{1})
	if r.Claim([]byte{1}) {
		t.Fatal("a nil registry claimed a slice")
	}
	var z Registry
	z.Give(nil)
	if z.Claim(nil) || z.Claim([]byte{}) {
		t.Fatal("an empty slice was claimed")
	}
}

// More items given than the ring holds: the oldest are no longer claimable
// (the store copies them), the newest are.
func TestRingForgetsTheOldest(t *testing.T) {
	var r Registry
	bufs := make([][]byte, ringSize+10)
	for i := range bufs {
		bufs[i] = make([]byte, 8)
		r.Give(bufs[i])
	}
	for i, b := range bufs {
		if got, want := r.Claim(b), i >= 10; got != want {
			t.Fatalf("item %d of %d: claimed %v, want %v", i, len(bufs), got, want)
		}
	}
}
