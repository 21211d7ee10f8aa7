// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"

	"github.com/otelcol-relay/otelcol-relay/components/internal/handoff"
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
	// handoff holds the values their callers gave up (Set keeps them uncopied).
	handoff *handoff.Registry
	logger  *zap.Logger
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
	ages        itemAges
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
	if err := os.MkdirAll(dir, 0o750); err != nil { //nolint:gosec // G703: dir is the client's directory under the operator's configured directory
		return nil, fmt.Errorf("queue_storage: creating %s: %w", dir, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600) //nolint:gosec // G304: the lock file in the client's directory
	if err != nil {
		return nil, fmt.Errorf("queue_storage: %w", err)
	}
	if err := lockFile(lock); err != nil {
		lock.Close()
		return nil, fmt.Errorf("queue_storage: %s is in use by another client or process: %w", dir, err)
	}
	s := &store{dir: dir, opts: opts, lock: lock, index: map[string]entry{}, ages: itemAges{now: time.Now}}
	if err := s.recover(); err != nil {
		_ = s.closeFiles() // the recovery error is the one to report
		return nil, err
	}
	s.ages.recovered(s.index, segmentWritten)
	if err := s.roll(0, s.drain(0, 0)); err != nil {
		// On a full volume, keep writing into the newest segment's free space
		// (recovery left the end of data at its last good record).
		if !errors.Is(err, ErrVolumeFull) || len(s.segs) == 0 {
			_ = s.closeFiles() // the roll error is the one to report
			return nil, err
		}
		s.opts.logger.Warn("queue_storage: volume full at start; writing into the newest segment's free space", zap.Error(err))
	}
	s.reclaim()
	return s, nil
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
	var newItems []string
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
				if isItemKey(o.Key) && !slices.Contains(newItems, o.Key) {
					newItems = append(newItems, o.Key)
				}
			}
			// Claimed here, before anything can fail, so that a given value
			// never waits in the registry.
			writes = append(writes, op{typ: opSet, key: o.Key, value: o.Value, owned: s.opts.handoff.Claim(o.Value)})
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
	s.ages.added(newItems)
	s.reclaim()
	return nil
}

// oldestItemAge is how long the oldest queue item in the store has waited.
func (s *store) oldestItemAge() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0
	}
	return s.ages.oldest(s.index)
}

// segmentWritten is when seg was last written: the file's modification time,
// or now if it cannot be read (the item then counts as new, never as older).
func segmentWritten(seg *segment) time.Time {
	if seg != nil && seg.f != nil {
		if st, err := seg.f.Stat(); err == nil {
			return st.ModTime()
		}
	}
	return time.Now()
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
// exporter_otlp_http_wire_default_metrics, ...) and returns the size of every
// live value by key. It takes no lock and writes nothing: it is for tools and
// tests that look at a volume no process is using.
func Inspect(dir string) (map[string]int, error) {
	s := &store{dir: dir, readOnly: true, index: map[string]entry{}, opts: storeOptions{logger: zap.NewNop()}}
	defer func() { _ = s.closeFiles() }() // read only: closing loses nothing
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
