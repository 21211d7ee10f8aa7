// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// apply makes o (found in seg at record offset recOff) the latest state of its
// key. With cache, o.value may be kept in memory: a copy, since the caller may
// reuse its buffer once Set returns, as it may with file_storage, unless the
// caller handed it off (o.owned).
func (s *store) apply(seg *segment, recOff int64, o op, cache bool) {
	old, existed := s.index[o.key]
	s.countKey(o, existed)
	if existed {
		old.seg.live--
		s.liveBytes -= int64(old.n + len(o.key))
		if old.val != nil {
			s.opts.cache.release(old.n)
		}
		delete(s.index, o.key)
		if o.typ == opDelete && cache {
			s.addGhost(old)
		}
	}
	if o.typ == opLink {
		s.applyLink(o)
		return
	}
	if o.typ != opSet {
		return
	}
	e := entry{seg: seg, off: recOff + int64(o.valueOff), n: len(o.value)}
	if cache && s.opts.cache.take(e.n) {
		if o.owned {
			e.val = o.value
		} else {
			// append, not make+copy: the runtime skips zeroing what it copies over.
			e.val = append([]byte(nil), o.value...)
		}
	}
	seg.live++
	s.liveBytes += int64(e.n + len(o.key))
	s.index[o.key] = e
}

// roll starts a new segment big enough for a record of need bytes, the
// reserve and the drain once that record is written.
func (s *store) roll(need, drain int64) error {
	var id uint64 = 1
	if len(s.segs) > 0 {
		id = s.segs[len(s.segs)-1].id + 1
	}
	size := s.segmentFor(need, drain)
	path := filepath.Join(s.dir, segName(id))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600) //nolint:gosec // G304: a segment file named by segName in the store's directory
	if err != nil {
		return fmt.Errorf("queue_storage: creating segment: %w", err)
	}
	// Allocate the whole segment now: writes inside it cannot then fail for
	// lack of space, and the reserve at its end stays usable on a full volume.
	if err := allocate(f, 0, size); err != nil {
		f.Close()
		os.Remove(path) //nolint:gosec // G703: the segment file just created above
		if errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("%w: no room for a %d-byte segment in %s: %w", ErrVolumeFull, size, s.dir, err)
		}
		return fmt.Errorf("queue_storage: allocating %s: %w", path, err)
	}
	if s.opts.fsync {
		if err := s.dirsync(); err != nil {
			f.Close()
			return err
		}
	}
	if len(s.segs) > 0 {
		releaseTail(s.segs[len(s.segs)-1])
	}
	s.segs = append(s.segs, &segment{id: id, path: path, f: f, size: size, dataEnd: max(s.opts.segmentSize-s.opts.reserve, need)})
	return nil
}

func (s *store) value(e entry) ([]byte, error) {
	if e.val != nil {
		return e.val, nil
	}
	v := make([]byte, e.n)
	if _, err := e.seg.f.ReadAt(v, e.off); err != nil {
		return nil, fmt.Errorf("queue_storage: reading %d bytes at %d of %s: %w", e.n, e.off, e.seg.path, err)
	}
	return v, nil
}

// write appends one record holding ops and applies it. A record that adds a
// key may use neither the reserve nor the drain at the end of the segment.
func (s *store) write(ops []op, addsKey bool) error {
	parts, total, offs, err := recordParts(ops, s.opts.recordLimit())
	if err != nil {
		return err
	}
	for i := range ops {
		ops[i].valueOff = offs[i]
	}
	need := int64(total)
	seg := s.segs[len(s.segs)-1]
	drain := s.drain(s.addedKeys(ops))
	if addsKey && seg.end+need <= seg.dataEnd && seg.end+need+s.opts.reserve+drain > seg.size {
		if err := s.grow(seg, seg.end+need+s.opts.reserve+drain); err != nil {
			return err
		}
	}
	limit := seg.size
	if addsKey {
		limit = min(seg.dataEnd, seg.size-s.opts.reserve-drain)
	}
	if seg.end+need > limit {
		if err := s.roll(need, drain); err != nil {
			if !errors.Is(err, ErrVolumeFull) || addsKey || seg.end+need > seg.size {
				return err
			}
			// No room for a new segment: an update or delete may use the reserve.
		} else {
			seg = s.segs[len(s.segs)-1]
		}
	}
	if err := pwriteAll(seg.f, parts, seg.end); err != nil {
		// Erase what may have been written so recovery reads the end of data here.
		_, _ = seg.f.WriteAt(make([]byte, headerLen), seg.end)
		if errors.Is(err, syscall.ENOSPC) {
			err = fmt.Errorf("%w: %w", ErrVolumeFull, err)
		}
		return fmt.Errorf("queue_storage: writing %s: %w", seg.path, err)
	}
	if s.opts.fsync {
		if err := s.datasync(seg.f); err != nil {
			return s.unwrite(seg, need, fmt.Errorf("queue_storage: fsync %s: %w", seg.path, err))
		}
	}
	for _, o := range ops {
		s.apply(seg, seg.end, o, true)
	}
	seg.end += need
	return nil
}

// unwrite erases the record of need bytes just written at the end of seg,
// whose fdatasync failed, so the next start does not apply a batch the caller
// was told failed. If the erasure cannot be made durable either, what the disk
// holds is unknown: the store takes no more writes (a restart recovers it).
func (s *store) unwrite(seg *segment, need int64, cause error) error {
	_, err := seg.f.WriteAt(make([]byte, need), seg.end)
	if err == nil {
		err = s.datasync(seg.f)
	}
	if err != nil {
		s.broken = fmt.Errorf("%w; erasing that record failed too (%w): the store takes no more writes until a restart", cause, err)
		return s.broken
	}
	return cause
}

// pwriteAll writes parts back to back at off with as few syscalls as the
// kernel allows (one, unless it writes short or there are more than IOV_MAX).
func pwriteAll(f *os.File, parts [][]byte, off int64) error {
	const iovMax = 1024
	for len(parts) > 0 {
		batch := parts[:min(len(parts), iovMax)]
		n, err := pwritev(f, batch, off)
		if err != nil {
			return err
		}
		off += int64(n)
		for n > 0 && len(parts) > 0 {
			if n >= len(parts[0]) {
				n -= len(parts[0])
				parts = parts[1:]
				continue
			}
			parts[0] = parts[0][n:]
			n = 0
		}
		for len(parts) > 0 && len(parts[0]) == 0 {
			parts = parts[1:]
		}
	}
	return nil
}
