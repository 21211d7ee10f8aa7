package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"go.etcd.io/bbolt"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// fileStorageBucket is where file_storage keeps every key (filestorage
// v0.165.1, client.go: defaultBucket).
var fileStorageBucket = []byte("default")

// migrateFileStorage copies every key of the file_storage database at path
// into s, makes it durable, then deletes the database. A crash in between
// repeats the copy on the next start, which is harmless: s then holds exactly
// the database's keys. A store that holds anything else is not overwritten.
func migrateFileStorage(s *store, path string, logger *zap.Logger) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("queue_storage: opening file_storage database %s to migrate it: %w", path, err)
	}
	kv := map[string][]byte{}
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(fileStorageBucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			kv[string(k)] = bytes.Clone(v)
			return nil
		})
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("queue_storage: reading file_storage database %s: %w", path, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.index {
		v, ok := kv[k]
		cur, err := s.value(e)
		if err != nil {
			return err
		}
		if !ok || !bytes.Equal(v, cur) {
			return fmt.Errorf("queue_storage: %s already holds data (key %q) and the file_storage database %s would overwrite it; drain one of them or remove migrate_from", s.dir, k, path)
		}
	}
	if len(kv) > 0 {
		ops := make([]op, 0, len(kv))
		for k, v := range kv {
			ops = append(ops, op{typ: opSet, key: k, value: v})
		}
		sort.Slice(ops, func(i, j int) bool { return ops[i].key < ops[j].key })
		if err := s.write(ops, true); err != nil {
			return fmt.Errorf("queue_storage: migrating %s: %w", path, err)
		}
		seg := s.segs[len(s.segs)-1]
		if err := unix.Fdatasync(int(seg.f.Fd())); err != nil {
			return fmt.Errorf("queue_storage: fsync %s: %w", seg.path, err)
		}
		if err := syncDir(s.dir); err != nil {
			return err
		}
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("queue_storage: migrated %s but cannot remove it: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return err
	}
	logger.Info("queue_storage: migrated a file_storage database", zap.String("from", path), zap.String("to", s.dir), zap.Int("keys", len(kv)))
	return nil
}
