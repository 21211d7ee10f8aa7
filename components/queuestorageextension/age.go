// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

// itemAges remembers when each queue item still in the store was written, in
// the order of writing, so that the oldest one's age (how late the backend's
// data is) costs no scan of the index. The persistent queue's items are the
// keys made of digits (its indexes); its metadata keys (qmv0, ri, wi, di) are
// not items.
type itemAges struct {
	fifo []itemAge // oldest first; entries of deleted keys are dropped lazily
	now  func() time.Time
}

type itemAge struct {
	key string
	at  time.Time
}

func isItemKey(key string) bool {
	_, err := strconv.ParseUint(key, 10, 64)
	return err == nil
}

// added records items written now for the first time.
func (a *itemAges) added(keys []string) {
	if len(keys) == 0 {
		return
	}
	at := a.now()
	for _, k := range keys {
		a.fifo = append(a.fifo, itemAge{key: k, at: at})
	}
}

// recovered records the items found on the volume at start, each aged from
// the last write to its segment (the file's modification time): no write time
// is kept per record, so this is the latest the item can have been written.
func (a *itemAges) recovered(index map[string]entry, written func(*segment) time.Time) {
	var found []itemAge
	for k, e := range index {
		if isItemKey(k) {
			found = append(found, itemAge{key: k, at: written(e.seg)})
		}
	}
	slices.SortFunc(found, func(x, y itemAge) int {
		if c := x.at.Compare(y.at); c != 0 {
			return c
		}
		xi, _ := strconv.ParseUint(x.key, 10, 64)
		yi, _ := strconv.ParseUint(y.key, 10, 64)
		return cmp.Compare(xi, yi)
	})
	a.fifo = append(found, a.fifo...)
}

// oldest is the age of the oldest item live in index, 0 without any. It
// forgets the deleted items ahead of it, and compacts the rest when most of
// what it remembers is gone (one item retried for hours while thousands pass).
func (a *itemAges) oldest(index map[string]entry) time.Duration {
	i := 0
	for i < len(a.fifo) {
		if _, ok := index[a.fifo[i].key]; ok {
			break
		}
		i++
	}
	a.fifo = a.fifo[i:]
	if len(a.fifo) > 1024 && len(a.fifo) > 2*len(index) {
		a.fifo = slices.DeleteFunc(a.fifo, func(x itemAge) bool {
			_, ok := index[x.key]
			return !ok
		})
	}
	if len(a.fifo) == 0 {
		a.fifo = nil // let the backing array go
		return 0
	}
	return a.now().Sub(a.fifo[0].at)
}
