// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// migrateWithLimit starts queue_storage on dir with migrate_from old, stores
// limited to records of maxRecord bytes and segments of segmentSize, and
// returns the migrated client of exporterID's logs.
func migrateWithLimit(t *testing.T, old, dir string, maxRecord int, segmentSize int64) (storage.Extension, storage.Client) {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.Directory, cfg.MigrateFrom, cfg.SegmentSize = dir, old, segmentSize
	ext := startExt(t, NewFactory(), cfg)
	ext.(*queueStorage).maxRecord = maxRecord
	c, err := ext.GetClient(ctx, component.KindExporter, exporterID, "logs")
	if err != nil {
		t.Fatal(err)
	}
	return ext, c
}

// A backlog larger than the largest record a store reads back (1 GiB in the
// build, 64 KiB here) survives the restarts after its migration, every item
// intact. Before, the whole database was one record: the next start rejected
// it as a torn tail and every item was lost, the database already deleted.
// The same with segments smaller than the backlog: the copy spans segments.
func TestMigrationLargerThanARecordSurvivesRestarts(t *testing.T) {
	for _, tc := range []struct {
		name        string
		limit       int
		segmentSize int64
	}{
		{"record limit 64 KiB", 64 << 10, 0},
		{"segments of 64 KiB", 0, minSegmentSize},
	} {
		t.Run(tc.name, func(t *testing.T) { testMigrationSurvivesRestarts(t, tc.limit, tc.segmentSize) })
	}
}

func testMigrationSurvivesRestarts(t *testing.T, limit int, segmentSize int64) {
	old, dir := t.TempDir(), t.TempDir()
	want := fileStorageBacklog(t, old) // 150 items of about 1.1 KB: 170 KB
	db := filepath.Join(old, "exporter_otlp_http_default_logs")
	ext, c := migrateWithLimit(t, old, dir, limit, segmentSize)
	expectClient(t, c, want, []string{"0", "49"})
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("the file_storage database is still there after the migration: %v", err)
	}
	if err := ext.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		ext, c := migrateWithLimit(t, old, dir, limit, segmentSize)
		for k, v := range want {
			got, err := c.Get(ctx, k)
			if err != nil || !bytes.Equal(got, v) {
				t.Fatalf("restart %d after migrating %d keys (record limit %d, segments %d): key %q is %d bytes (%v), want %d",
					round+1, len(want), limit, segmentSize, k, len(got), err, len(v))
			}
		}
		if err := ext.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A crash in the middle of a migration leaves the store holding the first
// keys of the database (key order) with its values, and the database: the
// next start keeps those, copies the rest once, and only then deletes the
// database.
func TestMigrationInterruptedMidwayIsCompleted(t *testing.T) {
	old, dir := t.TempDir(), t.TempDir()
	want := fileStorageBacklog(t, old)
	keys := slices.Sorted(maps.Keys(want))
	o, _ := testOptions(64 << 10)
	s := openTest(t, filepath.Join(dir, "exporter_otlp_http_default_logs"), o)
	for _, k := range keys[:len(keys)/2] {
		mustBatch(t, s, storage.SetOperation(k, want[k]))
	}
	s.Close(ctx)

	for round := range 2 {
		ext, c := migrateWithLimit(t, old, dir, 0, minSegmentSize)
		expectClient(t, c, want, []string{"0", "49"})
		if _, err := os.Stat(filepath.Join(old, "exporter_otlp_http_default_logs")); !os.IsNotExist(err) {
			t.Fatalf("round %d: the database is still there: %v", round, err)
		}
		expectOnly(t, c, want)
		if err := ext.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A migration that fails after some of its records (here the volume fills
// up; a kill -9 leaves the same, at most with a torn last record that
// recovery drops) keeps the database, and the store it leaves behind, moved
// to a volume with room, is completed by the next start: every key and
// nothing else.
func TestMigrationFailingMidwayIsCompletedNextStart(t *testing.T) {
	old := t.TempDir()
	want := fileStorageItems(t, old, 400, 4000, 0)
	db := filepath.Join(old, "exporter_otlp_http_default_logs")

	full := filepath.Join(tmpfs(t, "1m"), "qs")
	cfg := createDefaultConfig()
	cfg.Directory, cfg.MigrateFrom, cfg.SegmentSize = full, old, minSegmentSize
	qs := startExt(t, NewFactory(), cfg)
	_, err := qs.GetClient(ctx, component.KindExporter, exporterID, "logs")
	if !errors.Is(err, ErrVolumeFull) {
		t.Fatalf("migrating 1.6 MB into a 1 MiB volume: %v, want %v", err, ErrVolumeFull)
	}
	if err = qs.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err = os.Stat(db); err != nil {
		t.Fatalf("the database is gone after a failed migration: %v", err)
	}
	partial, err := Inspect(filepath.Join(full, "exporter_otlp_http_default_logs"))
	if err != nil {
		t.Fatal(err)
	}
	if len(partial) == 0 || len(partial) >= len(want) {
		t.Fatalf("the failed migration left %d of %d keys, want some", len(partial), len(want))
	}

	roomy := filepath.Join(t.TempDir(), "qs")
	if err := os.CopyFS(roomy, os.DirFS(full)); err != nil {
		t.Fatal(err)
	}
	cfg.Directory = roomy
	for round := range 2 {
		qs := startExt(t, NewFactory(), cfg)
		c, err := qs.GetClient(ctx, component.KindExporter, exporterID, "logs")
		if err != nil {
			t.Fatalf("round %d, completing a migration that had copied %d of %d keys: %v", round, len(partial), len(want), err)
		}
		expectClient(t, c, want, nil)
		expectOnly(t, c, want)
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Fatalf("round %d: the database is still there: %v", round, err)
		}
		if err := qs.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// expectOnly fails unless c holds no key beyond want: its live bytes are
// want's keys and values.
func expectOnly(t *testing.T, c storage.Client, want map[string][]byte) {
	t.Helper()
	live, _, _ := c.(*trackedClient).usage()
	var wantLive int64
	for k, v := range want {
		wantLive += int64(len(k) + len(v))
	}
	if live != wantLive {
		t.Fatalf("%d live bytes, want %d: keys beyond the database's", live, wantLive)
	}
}
