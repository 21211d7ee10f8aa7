// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
)

// On a full volume the queue still has to deliver what it holds, and every
// delivery writes: per item, a batch that updates the queue's metadata while
// reading the item, and one that updates it again and deletes the item. No
// segment is freed until all its items are delivered, so those records must
// fit in space the store already holds. The newest segment therefore keeps
// free, besides the reserve, the drain: what delivering every live key costs.
// Keys are only added while the drain fits; updates and deletes may use it.
// The drain is bounded by the number of keys, not by the bytes queued, so it
// holds for any segment and volume size.

// updateSlack is added to the largest update seen for each of a key's two
// delivery records: the queue's metadata grows a little while more items are
// in flight than when it was last written.
const updateSlack = 32

// maxCountedUpdate is the largest update counted as metadata; larger ones
// (values rewritten in place) are left to the reserve.
const maxCountedUpdate = 1 << 10

func uvarintLen(n int) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], uint64(n))
}

func deleteOpLen(key string) int { return 1 + uvarintLen(len(key)) + len(key) }

func setOpLen(key string, n int) int { return deleteOpLen(key) + uvarintLen(n) + n }

// drain is the space delivering and deleting every live key takes, plus
// newKeys keys more whose delete ops take newDeletes bytes.
func (s *store) drain(newKeys, newDeletes int) int64 {
	perKey := int64(2 * (headerLen + s.maxUpdate + updateSlack))
	return int64(len(s.index)+newKeys)*perKey + s.deleteBytes + int64(newDeletes)
}

// addedKeys counts the keys ops would add and the bytes of their deletes.
func (s *store) addedKeys(ops []op) (keys, deletes int) {
	seen := map[string]bool{}
	for _, o := range ops {
		if (o.typ != opSet && o.typ != opLink) || seen[o.key] {
			continue
		}
		seen[o.key] = true
		if _, ok := s.index[o.key]; !ok {
			keys++
			deletes += deleteOpLen(o.key)
		}
	}
	return keys, deletes
}

// countKey keeps the drain's figures as apply changes the index: a key added
// or removed, and the largest metadata update seen.
func (s *store) countKey(o op, existed bool) {
	switch {
	case o.typ == opSet && existed:
		if n := setOpLen(o.key, len(o.value)); n <= maxCountedUpdate {
			s.maxUpdate = max(s.maxUpdate, n)
		}
	case o.typ == opSet || o.typ == opLink:
		s.deleteBytes += int64(deleteOpLen(o.key))
	case existed:
		s.deleteBytes -= int64(deleteOpLen(o.key))
	}
}

// segmentFor is the size of a new segment for a record of need bytes: room
// for the reserve and the drain once it is written. Later records that add
// keys grow the drain, and grow the segment with it (grow).
func (s *store) segmentFor(need, drain int64) int64 {
	return max(s.opts.segmentSize, need+s.opts.reserve+drain)
}

// grow extends the newest segment to at least size, with headroom so that
// not every record needs an fallocate.
func (s *store) grow(seg *segment, size int64) error {
	size += s.opts.segmentSize / 8
	if err := allocate(seg.f, seg.size, size-seg.size); err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("%w: no room to grow %s to %d bytes for the space delivering its keys takes: %w", ErrVolumeFull, seg.path, size, err)
		}
		return fmt.Errorf("queue_storage: growing %s: %w", seg.path, err)
	}
	seg.size = size
	return nil
}

// releaseTail gives the unwritten end of a segment that no longer takes
// writes back to the filesystem: only the newest segment's free space is
// usable, so the drain is held once. The file keeps its size (recovery reads
// the hole as zeros, the end of data). Where the filesystem cannot punch
// holes the space stays allocated: nothing is lost, the volume fills sooner.
func releaseTail(seg *segment) {
	const block = 4096
	from := (seg.end + block - 1) &^ (block - 1)
	if from >= seg.size {
		return
	}
	if punchHole(seg.f, from, seg.size-from) {
		seg.size = from // what it takes on disk, for reclaim's bound
	}
}
