// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// ErrVolumeFull is returned (wrapped) by a write that would add a key when the
// volume has no room for another segment. Updates and deletes of existing keys
// still succeed from the reserve kept in every segment, so a queue that cannot
// take new items can still dispatch and delete the ones it holds.
var ErrVolumeFull = errors.New("queue volume full")

var errClosed = errors.New("queue_storage client is closed")

type storeOptions struct {
	segmentSize int64
	reserve     int64
	fsync       bool
	cache       *cacheBudget
	logger      *zap.Logger
	// maxRecord lowers the largest record body (0: maxRecordLen), so
	// tests show the limit's behaviour without writing gigabytes.
	maxRecord int
	// fdatasync and syncDir replace the syscalls when set (fsync.go).
	fdatasync func(*os.File) error
	syncDir   func(dir string) error
}

func (o storeOptions) recordLimit() int {
	if o.maxRecord <= 0 || o.maxRecord > maxRecordLen {
		return maxRecordLen
	}
	return o.maxRecord
}

// cacheBudget is the memory all clients of one extension may use to keep
// values, so a fresh value is read back without touching the disk.
type cacheBudget struct {
	max  int64
	used atomic.Int64
}

func (c *cacheBudget) take(n int) bool {
	if c == nil || c.max <= 0 {
		return false
	}
	if c.used.Add(int64(n)) > c.max {
		c.used.Add(-int64(n))
		return false
	}
	return true
}

func (c *cacheBudget) release(n int) {
	if c != nil {
		c.used.Add(-int64(n))
	}
}

type segment struct {
	id   uint64
	path string
	f    *os.File
	size int64 // allocated length of the file
	end  int64 // where the next record goes
	// dataEnd is where records that add keys stop: beyond it the segment
	// holds only the reserve and the drain, and such a record rolls.
	dataEnd int64
	live    int // index entries that point into this segment
}

type entry struct {
	seg *segment
	off int64 // offset of the value in seg
	n   int
	val []byte // the value, while it is kept in memory
}

// store is one storage.Client: a directory of append-only segments and an
// in-memory index from key to the segment and offset of its latest value.
type store struct {
	dir  string
	opts storeOptions
	lock *os.File

	mu        sync.Mutex
	segs      []*segment // oldest first; the last one takes writes
	index     map[string]entry
	liveBytes int64
	// deleteBytes and maxUpdate size the drain (drain.go).
	deleteBytes int64
	maxUpdate   int
	ghosts      []ghost // link.go
	// broken is set when a failed write could not be erased (unwrite).
	broken error
	closed bool
	// readOnly stores (Inspect) open segments read-only and leave torn
	// tails as they are.
	readOnly bool
	// Recovery findings, for the logs and for tests.
	tornTails, corruptSegments int
}

var _ storage.Client = (*store)(nil)

func segName(id uint64) string { return fmt.Sprintf("%016x.seg", id) }

// openStore recovers the store in dir (creating it if needed) and starts a new
// segment for writes.
func openStore(dir string, opts storeOptions) (*store, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("queue_storage: creating %s: %w", dir, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("queue_storage: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("queue_storage: %s is in use by another client or process: %w", dir, err)
	}
	s := &store{dir: dir, opts: opts, lock: lock, index: map[string]entry{}}
	if err := s.recover(); err != nil {
		s.closeFiles()
		return nil, err
	}
	if err := s.roll(0, s.drain(0, 0)); err != nil {
		// On a full volume, keep writing into the newest segment's free space
		// (recovery left the end of data at its last good record).
		if !errors.Is(err, ErrVolumeFull) || len(s.segs) == 0 {
			s.closeFiles()
			return nil, err
		}
		s.opts.logger.Warn("queue_storage: volume full at start; writing into the newest segment's free space", zap.Error(err))
	}
	s.reclaim()
	return s, nil
}

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

// apply makes o (found in seg at record offset recOff) the latest state of its
// key. With cache, a copy of o.value may be kept in memory: the caller may
// reuse its buffer once Set returns, as it may with file_storage.
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
		// append, not make+copy: the runtime skips zeroing what it copies over.
		e.val = append([]byte(nil), o.value...)
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
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("queue_storage: creating segment: %w", err)
	}
	// Allocate the whole segment now: writes inside it cannot then fail for
	// lack of space, and the reserve at its end stays usable on a full volume.
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		if errors.Is(err, syscall.EOPNOTSUPP) {
			err = f.Truncate(size)
		}
		if err != nil {
			f.Close()
			os.Remove(path)
			if errors.Is(err, syscall.ENOSPC) {
				return fmt.Errorf("%w: no room for a %d-byte segment in %s: %w", ErrVolumeFull, size, s.dir, err)
			}
			return fmt.Errorf("queue_storage: allocating %s: %w", path, err)
		}
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
		n, err := unix.Pwritev(int(f.Fd()), batch, off)
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

// Batch applies the writes of ops as one record, atomically, and serves the
// gets in order (a get sees the writes before it in the same batch).
func (s *store) Batch(_ context.Context, ops ...*storage.Operation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	var writes []op
	addsKey := false
	for i, o := range ops {
		switch o.Type {
		case storage.Get:
			o.Value = nil
			if w, ok := lastWrite(ops[:i], o.Key); ok {
				if w.Type == storage.Set {
					o.Value = w.Value
				}
				continue
			}
			if e, ok := s.index[o.Key]; ok {
				v, err := s.value(e)
				if err != nil {
					return err
				}
				o.Value = v
				s.handOver(o.Key, e)
			}
		case storage.Set:
			if _, ok := s.index[o.Key]; !ok {
				addsKey = true
			}
			writes = append(writes, op{typ: opSet, key: o.Key, value: o.Value})
		case storage.Delete:
			writes = append(writes, op{typ: opDelete, key: o.Key})
		default:
			return fmt.Errorf("queue_storage: unknown operation type %d", o.Type)
		}
	}
	if len(writes) == 0 {
		return nil
	}
	if s.broken != nil {
		return s.broken
	}
	err := s.write(writes, addsKey)
	if errors.Is(err, ErrVolumeFull) && addsKey {
		// Values offered again under new keys (link.go) take a few bytes of
		// the reserve instead of their size.
		if links, ok := s.linked(writes); ok {
			err = s.write(links, false)
		}
	}
	if err != nil {
		return err
	}
	s.reclaim()
	return nil
}

// handOver gives the caller the cached copy of key's value instead of copying
// it again: the store forgets it and reads it from the segment if it is asked
// again. The queue reads each item once, so this costs nothing there.
func (s *store) handOver(key string, e entry) {
	if e.val == nil {
		return
	}
	s.opts.cache.release(e.n)
	e.val = nil
	s.index[key] = e
}

func lastWrite(ops []*storage.Operation, key string) (*storage.Operation, bool) {
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i].Key == key && ops[i].Type != storage.Get {
			return ops[i], true
		}
	}
	return nil, false
}

func (s *store) Get(ctx context.Context, key string) ([]byte, error) {
	o := storage.GetOperation(key)
	err := s.Batch(ctx, o)
	return o.Value, err
}

func (s *store) Set(ctx context.Context, key string, value []byte) error {
	return s.Batch(ctx, storage.SetOperation(key, value))
}

func (s *store) Delete(ctx context.Context, key string) error {
	return s.Batch(ctx, storage.DeleteOperation(key))
}

// Close releases the files. Everything written stays on disk.
func (s *store) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, e := range s.index {
		if e.val != nil {
			s.opts.cache.release(e.n)
		}
	}
	return s.closeFiles()
}

func (s *store) closeFiles() error {
	var errs []error
	for _, g := range s.segs {
		errs = append(errs, g.f.Close())
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close())
	}
	return errors.Join(errs...)
}

// Inspect reads the store of one client directory (exporter_otlp_http_default_logs,
// processor_durable_queue_default_logs, ...) and returns the size of every
// live value by key. It takes no lock and writes nothing: it is for tools and
// tests that look at a volume no process is using.
func Inspect(dir string) (map[string]int, error) {
	s := &store{dir: dir, readOnly: true, index: map[string]entry{}, opts: storeOptions{logger: zap.NewNop()}}
	defer s.closeFiles()
	if err := s.recover(); err != nil {
		return nil, err
	}
	live := make(map[string]int, len(s.index))
	for k, e := range s.index {
		live[k] = e.n
	}
	return live, nil
}

// usage reports the live data and the disk the segments take.
func (s *store) usage() (live, disk int64, segments int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveBytes, s.diskBytes(), len(s.segs)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("queue_storage: fsync %s: %w", dir, err)
	}
	return nil
}
