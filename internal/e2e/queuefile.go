// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"
)

// QueueContents is what the persistent queues in a file_storage directory still
// hold: the exporter requests not yet delivered, read from the bbolt files the
// way file_storage writes them (bucket "default", one key per request index next
// to the queue's metadata key).
type QueueContents struct {
	Requests int
	Bytes    int64 // encoded request bytes
	// Files maps each queue file (exporter_<type>_<name>_<signal>) to its
	// requests.
	Files map[string]int
}

// ReadQueueDir opens every queue file under dir read-only. The collector that
// owns the directory must have stopped (bbolt locks its files).
func ReadQueueDir(dir string) (QueueContents, error) {
	qc := QueueContents{Files: map[string]int{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return qc, err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := readQueueStorage(filepath.Join(dir, e.Name()), &qc); err != nil {
				return qc, err
			}
			continue
		}
		db, err := bolt.Open(filepath.Join(dir, e.Name()), 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
		if err != nil {
			return qc, err
		}
		err = db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("default"))
			if b == nil {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				if _, perr := strconv.ParseUint(string(k), 10, 64); perr == nil {
					qc.Requests++
					qc.Bytes += int64(len(v))
					qc.Files[e.Name()]++
				}
				return nil
			})
		})
		_ = db.Close()
		if err != nil {
			return qc, err
		}
	}
	return qc, nil
}

// readQueueStorage adds what queue_storage client directories under dir hold:
// the exporters' persistent-queue items (numeric keys).
func readQueueStorage(dir string, qc *QueueContents) error {
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(segs) == 0 {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir() {
				if err := readQueueStorage(filepath.Join(dir, e.Name()), qc); err != nil {
					return err
				}
			}
		}
		return nil
	}
	live, err := queuestorageextension.Inspect(dir)
	if err != nil {
		return err
	}
	for k, n := range live {
		if _, err := strconv.ParseUint(k, 10, 64); err == nil {
			qc.Requests++
			qc.Bytes += int64(n)
			qc.Files[filepath.Base(dir)]++
		}
	}
	return nil
}
