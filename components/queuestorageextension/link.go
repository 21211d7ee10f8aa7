// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"bytes"
	"slices"

	"go.uber.org/zap"
)

// At start upstream's persistent queue deletes the items its consumers had in
// flight and offers their bytes again under new keys (exporterhelper v0.165.0,
// enqueueNotDispatchedReqs). On a full volume there is no room to write those
// values again, but they are still in their segments: the store remembers the
// values of the keys it deleted last (ghosts), and a set that would not fit
// whose value is one of them is written as a link to it instead.

// ghost is the value of a deleted key, still in its segment.
type ghost struct {
	seg *segment
	off int64
	n   int
}

const (
	maxGhosts = 256
	// minLinked is the smallest value worth a link: smaller ones fit the
	// reserve as they are.
	minLinked = 256
)

func (s *store) addGhost(e entry) {
	if e.n < minLinked {
		return
	}
	s.ghosts = append(s.ghosts, ghost{e.seg, e.off, e.n})
	if len(s.ghosts) > maxGhosts {
		s.ghosts = slices.Delete(s.ghosts, 0, len(s.ghosts)-maxGhosts)
	}
}

func (s *store) dropGhosts(seg *segment) {
	s.ghosts = slices.DeleteFunc(s.ghosts, func(g ghost) bool { return g.seg == seg })
}

// linked returns ops with every set that adds a key turned into a link to a
// ghost holding the same bytes, or false if one of them has none.
func (s *store) linked(ops []op) ([]op, bool) {
	out := slices.Clone(ops)
	used := map[int]bool{}
	for i, o := range out {
		if o.typ != opSet {
			continue
		}
		if _, ok := s.index[o.key]; ok {
			continue
		}
		j := slices.IndexFunc(s.ghosts, func(g ghost) bool {
			if g.n != len(o.value) || g.n < minLinked {
				return false
			}
			v, err := s.value(entry{seg: g.seg, off: g.off, n: g.n})
			return err == nil && bytes.Equal(v, o.value)
		})
		if j < 0 || used[j] {
			return nil, false
		}
		used[j] = true
		g := s.ghosts[j]
		out[i] = op{typ: opLink, key: o.key, linkSeg: g.seg.id, linkOff: g.off, linkLen: int64(g.n)}
	}
	return out, true
}

// applyLink points o's key at the value it links to.
func (s *store) applyLink(o op) {
	i := slices.IndexFunc(s.segs, func(g *segment) bool { return g.id == o.linkSeg })
	if i < 0 || o.linkOff+o.linkLen > s.segs[i].size {
		s.opts.logger.Error("queue_storage: a key links to a value that is not there; the key is lost",
			zap.String("key", o.key), zap.Uint64("segment_id", o.linkSeg), zap.Int64("offset", o.linkOff), zap.Int64("length", o.linkLen))
		return
	}
	seg := s.segs[i]
	seg.live++
	s.liveBytes += o.linkLen + int64(len(o.key))
	s.index[o.key] = entry{seg: seg, off: o.linkOff, n: int(o.linkLen)}
}
