// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestWatchCounterSeesTheRise(t *testing.T) {
	reads := []struct {
		v  float64
		ok bool
	}{{0, true}, {0, true}, {5, true}, {0, false}, {10, true}, {10, true}, {20, true}}
	var n atomic.Int32
	w := WatchCounter(func() (float64, bool) {
		i := int(n.Add(1)) - 1
		if i >= len(reads) {
			return 0, false
		}
		return reads[i].v, reads[i].ok
	}, time.Millisecond)
	for n.Load() <= int32(len(reads)) {
		time.Sleep(time.Millisecond)
	}
	r := w.Stop()
	if r.First.IsZero() || r.Last.Before(r.First) || r.InFirstSecond != 20 {
		t.Errorf("rise %+v: want a first and a last rise, 20 within the first second", r)
	}
	if again := w.Stop(); again != r {
		t.Errorf("Stop again: %+v, want %+v", again, r)
	}
	if q := WatchCounter(func() (float64, bool) { return 0, false }, time.Millisecond).Stop(); !q.First.IsZero() {
		t.Errorf("a counter never read: %+v, want no rise", q)
	}
}
