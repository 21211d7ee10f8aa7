// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"
	"go.uber.org/zap"
)

// fileStorageBucket is where file_storage keeps every key (filestorage
// v0.165.1, client.go: defaultBucket).
var fileStorageBucket = []byte("default")

// migrateFileStorage copies every key of the file_storage database at path
// into s, makes the copy durable, then deletes the database.
//
// The keys are read with a cursor of one read transaction and written in
// records of at most one segment's worth, so memory stays at one batch and no
// record exceeds what recovery reads back, whatever the database's size. A
// crash before the delete leaves s holding some of the database's keys with
// the database's values; the next start sees exactly that, keeps them and
// copies the rest. A store that holds anything else is not overwritten.
func migrateFileStorage(s *store, path string, logger *zap.Logger) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("queue_storage: opening file_storage database %s to migrate it: %w", path, err)
	}
	start := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys, copied int
	var size int64
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(fileStorageBucket)
		if herr := s.holdsOnlyKeysOf(b, path); herr != nil {
			return herr
		}
		if b == nil {
			return nil
		}
		var copyErr error
		keys, copied, size, copyErr = s.copyBucket(b)
		return copyErr
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("queue_storage: migrating %s (the database is kept; the next start copies again): %w", path, err)
	}
	// Also when nothing was copied now: the copy a killed start wrote may
	// still be only in the page cache.
	if keys > 0 {
		if err := s.syncAll(); err != nil {
			return err
		}
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("queue_storage: migrated %s but cannot remove it: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return err
	}
	logger.Info("queue_storage: migrated a file_storage database", zap.String("from", path), zap.String("to", s.dir),
		zap.Int("keys", keys), zap.Int("keys_copied_now", copied), zap.Int64("value_bytes", size), zap.Duration("took", time.Since(start)))
	return nil
}

// holdsOnlyKeysOf checks that every key of s is in bucket b (nil: no bucket)
// with the same value: s is empty or a previous copy of b.
func (s *store) holdsOnlyKeysOf(b *bbolt.Bucket, path string) error {
	var c *bbolt.Cursor
	if b != nil {
		c = b.Cursor()
	}
	for k, e := range s.index {
		var v []byte
		found := false
		if c != nil {
			var got []byte
			got, v = c.Seek([]byte(k))
			found = got != nil && string(got) == k
		}
		cur, err := s.value(e)
		if err != nil {
			return err
		}
		if !found || !bytes.Equal(v, cur) {
			return fmt.Errorf("queue_storage: %s already holds data (key %q) and the file_storage database %s would overwrite it; drain one of them or remove migrate_from", s.dir, k, path)
		}
	}
	return nil
}

// copyBucket writes the keys of b that s does not hold yet, in key order, in
// records that each fit a segment with its reserve (a larger value gets a
// record of its own). It returns the keys in b, the keys written and the
// bytes of all values.
func (s *store) copyBucket(b *bbolt.Bucket) (keys, copied int, size int64, err error) {
	budget := min(s.opts.segmentSize-s.opts.reserve-headerLen, int64(s.opts.recordLimit()))
	var batch []op
	var batchBytes int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := s.write(batch, true); err != nil {
			return err
		}
		copied += len(batch)
		batch, batchBytes = batch[:0], 0
		return nil
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil && b.Bucket(k) != nil {
			continue // file_storage keeps no nested buckets; nothing of the queue's
		}
		keys++
		size += int64(len(v))
		if _, ok := s.index[string(k)]; ok {
			continue // copied before a crash, and equal (holdsOnlyKeysOf)
		}
		n := int64(1 + 2*binary.MaxVarintLen64 + len(k) + len(v))
		if batchBytes+n > budget {
			if err := flush(); err != nil {
				return keys, copied, size, err
			}
		}
		// bbolt's v lives only as long as the transaction; the store may keep
		// the value in memory.
		batch = append(batch, op{typ: opSet, key: string(k), value: bytes.Clone(v)})
		batchBytes += n
	}
	return keys, copied, size, flush()
}

// syncAll makes every segment and the directory entries that lead to them
// durable.
func (s *store) syncAll() error {
	for _, seg := range s.segs {
		if err := fdatasync(seg.f); err != nil {
			return fmt.Errorf("queue_storage: fsync %s: %w", seg.path, err)
		}
	}
	if err := syncDir(s.dir); err != nil {
		return err
	}
	return syncDir(filepath.Dir(s.dir))
}
