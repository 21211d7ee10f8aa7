// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// hugeMigrationEnv opts in to the migration of a real 1.1 GiB file_storage
// backlog, larger than the 1 GiB record limit (slow and 2.3 GiB of disk, so
// never run by default). It names a directory with room for it:
//
//	QUEUE_STORAGE_HUGE_MIGRATION=/tmp/qmhuge go test -run TestHugeMigrationPrepare ./components/queuestorageextension
//	QUEUE_STORAGE_HUGE_MIGRATION=/tmp/qmhuge go test -run TestHugeMigration$ -v ./components/queuestorageextension
//
// Prepare writes the backlog through the real file_storage extension; the
// second test migrates it, restarts and checks every item, and logs the time
// and the peak anonymous memory of the migration (a separate process from
// Prepare, so /usr/bin/time -v measures the migration alone).
const hugeMigrationEnv = "QUEUE_STORAGE_HUGE_MIGRATION"

const (
	hugeItems    = 1127 // 1.1 GiB of 1 MiB items, as a queue of 2000-record requests holds
	hugeItemSize = 1 << 20
)

func hugeItem(i int) []byte {
	v := bytes.Repeat([]byte{byte(i), byte(i >> 8), 0x5a, 0xa5}, hugeItemSize/4)
	binary.LittleEndian.PutUint64(v, uint64(i))
	return v
}

func hugeDir(t *testing.T) string {
	dir := os.Getenv(hugeMigrationEnv)
	if dir == "" {
		t.Skipf("set %s to a directory with 2.3 GiB free to run it", hugeMigrationEnv)
	}
	return dir
}

func TestHugeMigrationPrepare(t *testing.T) {
	dir := hugeDir(t)
	old := filepath.Join(dir, "file_storage")
	if err := os.RemoveAll(old); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(old, 0o750); err != nil {
		t.Fatal(err)
	}
	ext, c := fileStorageClient(t, old)
	for i := range hugeItems {
		if err := c.Batch(ctx, storage.SetOperation("qmv0", []byte(strconv.Itoa(i+1))), storage.SetOperation(strconv.Itoa(i), hugeItem(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ext.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(old, "exporter_otlp_http_default_logs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("file_storage database: %d MiB, %d items of %d bytes", st.Size()>>20, hugeItems, hugeItemSize)
}

func TestHugeMigration(t *testing.T) {
	dir := hugeDir(t)
	old, qs := filepath.Join(dir, "file_storage"), filepath.Join(dir, "qs")
	if _, err := os.Stat(filepath.Join(old, "exporter_otlp_http_default_logs")); err != nil {
		t.Fatalf("run TestHugeMigrationPrepare first: %v", err)
	}
	if err := os.RemoveAll(qs); err != nil {
		t.Fatal(err)
	}
	cfg := createDefaultConfig()
	cfg.Directory, cfg.MigrateFrom = qs, old

	stop, peak := sampleAnon()
	start := time.Now()
	ext := startExt(t, NewFactory(), cfg)
	if _, err := ext.GetClient(ctx, component.KindExporter, exporterID, "logs"); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	stop()
	t.Logf("migrated %d MiB in %v; peak anonymous memory during the migration %d MiB", hugeItems*hugeItemSize>>20, took, peak()>>20)
	if err := ext.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	for round := range 2 {
		ext := startExt(t, NewFactory(), cfg)
		c, err := ext.GetClient(ctx, component.KindExporter, exporterID, "logs")
		if err != nil {
			t.Fatal(err)
		}
		lost := 0
		for i := range hugeItems {
			if v, err := c.Get(ctx, strconv.Itoa(i)); err != nil || !bytes.Equal(v, hugeItem(i)) {
				lost++
			}
		}
		if meta, _ := c.Get(ctx, "qmv0"); string(meta) != strconv.Itoa(hugeItems) {
			t.Errorf("restart %d: metadata %q, want %d", round+1, meta, hugeItems)
		}
		if lost > 0 {
			t.Fatalf("restart %d: %d of %d migrated items lost or changed", round+1, lost, hugeItems)
		}
		if err := ext.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// sampleAnon samples the process's anonymous resident memory (RssAnon: the
// heap and stacks, not the database's mapped pages, which the kernel may
// drop) until stop is called, and reports its peak.
func sampleAnon() (stop func(), peak func() int64) {
	var mu sync.Mutex
	var peakBytes int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if n := rssAnon(); n > 0 {
				mu.Lock()
				peakBytes = max(peakBytes, n)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }, func() int64 { mu.Lock(); defer mu.Unlock(); return peakBytes }
}

func rssAnon() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
