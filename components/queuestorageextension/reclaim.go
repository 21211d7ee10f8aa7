// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"errors"
	"os"
	"sort"

	"go.uber.org/zap"
)

// reclaim deletes segments that hold no live key, oldest first (a delete in a
// newer segment must outlive the value it deletes), and copies the live values
// of the oldest segment forward while the segments take more than twice the
// live data plus two segments: disk use stays bounded under churn even when a
// few old keys stay alive.
func (s *store) reclaim() {
	removed := false
	defer func() {
		// A removal must be durable before a later write counts on it (a
		// segment back after a node crash would bring back delivered items).
		if removed && s.opts.fsync {
			if err := s.dirsync(); err != nil {
				s.opts.logger.Warn("queue_storage: syncing the directory after removing segments", zap.Error(err))
			}
		}
	}()
	for {
		for len(s.segs) > 1 && s.segs[0].live == 0 {
			removed = true
			old := s.segs[0]
			old.f.Close()
			if err := os.Remove(old.path); err != nil {
				s.opts.logger.Warn("queue_storage: removing an empty segment", zap.String("segment", old.path), zap.Error(err))
			}
			s.segs = s.segs[1:]
			s.dropGhosts(old)
		}
		if len(s.segs) <= 2 || s.diskBytes()-s.drain(0, 0) <= 2*s.liveBytes+2*s.opts.segmentSize {
			return
		}
		if err := s.copyForward(s.segs[0]); err != nil {
			if errors.Is(err, ErrVolumeFull) {
				return // compaction waits for room: the drain is not spent on it
			}
			s.opts.logger.Warn("queue_storage: compacting the oldest segment", zap.String("segment", s.segs[0].path), zap.Error(err))
			return
		}
	}
}

func (s *store) diskBytes() int64 {
	var n int64
	for _, g := range s.segs {
		n += g.size
	}
	return n
}

func (s *store) copyForward(seg *segment) error {
	var ops []op
	for k, e := range s.index {
		if e.seg != seg {
			continue
		}
		v, err := s.value(e)
		if err != nil {
			return err
		}
		ops = append(ops, op{typ: opSet, key: k, value: v})
	}
	if len(ops) == 0 {
		return nil
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].key < ops[j].key })
	// Copied values keep their keys, but the copy must leave the drain
	// free as an added key does.
	return s.write(ops, true)
}
