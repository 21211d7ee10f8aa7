// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

func (s *store) recover() error {
	names, err := filepath.Glob(filepath.Join(s.dir, "*.seg"))
	if err != nil {
		return err
	}
	type found struct {
		id   uint64
		path string
	}
	var files []found
	for _, p := range names {
		id, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(p), ".seg"), 16, 64)
		if err != nil {
			continue
		}
		files = append(files, found{id, p})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].id < files[j].id })
	var buf []byte
	for i, fd := range files {
		flag := os.O_RDWR
		if s.readOnly {
			flag = os.O_RDONLY
		}
		f, err := os.OpenFile(fd.path, flag, 0)
		if err != nil {
			return fmt.Errorf("queue_storage: opening segment: %w", err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("queue_storage: %w", err)
		}
		seg := &segment{id: fd.id, path: fd.path, f: f, size: st.Size(), dataEnd: st.Size()}
		s.segs = append(s.segs, seg)
		if int64(cap(buf)) < seg.size {
			buf = make([]byte, seg.size)
		}
		buf = buf[:seg.size]
		if _, err := f.ReadAt(buf, 0); err != nil {
			return fmt.Errorf("queue_storage: reading %s: %w", fd.path, err)
		}
		s.replay(seg, buf, i == len(files)-1)
	}
	return nil
}

// replay applies the records of one segment to the index. A bad record is
// a torn tail only at the end of the newest segment with nothing written
// after it (a crash tears only the last bytes written): it was never
// acknowledged and is erased. Anything else is corruption, logged with the
// segment, the offset and what was lost: one record when its length can be
// trusted and records follow it (they are kept), else the rest of the
// segment. The segments around it are still used.
func (s *store) replay(seg *segment, b []byte, newest bool) {
	var p int64
	for p < int64(len(b)) {
		ops, l, err := decodeRecord(b[p:], s.opts.recordLimit())
		if errors.Is(err, errEndOfData) {
			break
		}
		if err != nil {
			next, resync := s.badRecord(seg, b, p, newest, err)
			if !resync {
				p = next
				break
			}
			p = next
			continue
		}
		for _, o := range ops {
			s.apply(seg, p, o, false)
		}
		p += int64(l)
	}
	seg.end = p
}

// badRecord reports the bad record at p and says where replay goes on, if
// it can, or else where the segment's data ends.
func (s *store) badRecord(seg *segment, b []byte, p int64, newest bool, err error) (int64, bool) {
	next := p + headerLen
	if l, lerr := recordLen(b[p:], s.opts.recordLimit()); lerr == nil {
		next = p + int64(l) // the length is plausible: the body is damaged
	}
	after := b[min(next, int64(len(b))):]
	if newest && allZero(after) {
		s.tornTails++
		s.opts.logger.Warn("queue_storage: dropped a torn record at the tail of the newest segment (a crash while writing it; it was never acknowledged)",
			zap.String("segment", seg.path), zap.Int64("offset", p), zap.Error(err))
		// Erase its header so the next recovery reads the end of data here.
		if !s.readOnly {
			_, _ = seg.f.WriteAt(make([]byte, headerLen), p)
		}
		return p, false
	}
	s.corruptSegments++
	if _, _, derr := decodeRecord(after, s.opts.recordLimit()); next > p+headerLen && derr == nil {
		s.opts.logger.Error("queue_storage: segment is corrupted; one record (one batch) is lost, the records after it and every other segment are recovered",
			zap.String("segment", seg.path), zap.Int64("offset", p), zap.Int64("bytes_lost", next-p), zap.Error(err))
		return next, true
	}
	s.opts.logger.Error("queue_storage: segment is corrupted; the records after this offset in it are lost, every other segment is recovered",
		zap.String("segment", seg.path), zap.Int64("offset", p), zap.Int64("bytes_skipped", int64(len(b))-p), zap.Error(err))
	// Nothing more is written into it: what follows the damage stays as it is.
	return int64(len(b)), false
}
