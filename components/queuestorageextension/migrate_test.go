// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

var exporterID = component.MustNewIDWithName("otlp_http", "default")

func startExt(t testing.TB, f extension.Factory, cfg component.Config) storage.Extension {
	t.Helper()
	ext, err := f.Create(ctx, extensiontest.NewNopSettings(f.Type()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ext.Start(ctx, componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	return ext.(storage.Extension)
}

// shutdownExt shuts ext down, failing the test on an error; for a defer.
func shutdownExt(t testing.TB, ext component.Component) {
	t.Helper()
	if err := ext.Shutdown(ctx); err != nil {
		t.Error(err)
	}
}

// fileStorageBacklog writes a queue's backlog through the real file_storage
// extension, as the gateway did before queue_storage, and returns it.
func fileStorageBacklog(t *testing.T, dir string) map[string][]byte {
	return fileStorageItems(t, dir, 200, 1000, 50)
}

// fileStorageItems queues n items of about size bytes in file_storage on dir,
// each with its metadata update as the persistent queue writes them, deletes
// the first delivered of them, and returns the keys it holds.
func fileStorageItems(t *testing.T, dir string, n, size, delivered int) map[string][]byte {
	t.Helper()
	ext, c := fileStorageClient(t, dir)
	want := map[string][]byte{}
	for i := range n {
		k := strconv.Itoa(i)
		want[k], want["qmv0"] = item(i, size+i), []byte(fmt.Sprintf("meta %d", i))
		if err := c.Batch(ctx, storage.SetOperation("qmv0", want["qmv0"]), storage.SetOperation(k, want[k])); err != nil {
			t.Fatal(err)
		}
	}
	for i := range delivered {
		delete(want, strconv.Itoa(i))
		if err := c.Delete(ctx, strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ext.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return want
}

// fileStorageClient starts the real file_storage extension on dir and opens
// the client exporterID's logs queue has there.
func fileStorageClient(t *testing.T, dir string) (storage.Extension, storage.Client) {
	t.Helper()
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	ext := startExt(t, f, cfg)
	c, err := ext.GetClient(ctx, component.KindExporter, exporterID, "logs")
	if err != nil {
		t.Fatal(err)
	}
	return ext, c
}

func expectClient(t *testing.T, c storage.Client, want map[string][]byte, gone []string) {
	t.Helper()
	for k, v := range want {
		got, err := c.Get(ctx, k)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("key %q: %d bytes, %v; want %d bytes", k, len(got), err, len(v))
		}
	}
	for _, k := range gone {
		if got, _ := c.Get(ctx, k); got != nil {
			t.Fatalf("deleted key %q is back", k)
		}
	}
}

// Upgrading from file_storage with a backlog queued: queue_storage takes the
// database's keys over on start, deletes the database, and keeps the keys
// across later restarts.
func TestMigrateFromFileStorage(t *testing.T) {
	old, dir := t.TempDir(), t.TempDir()
	want := fileStorageBacklog(t, old)
	db := filepath.Join(old, "exporter_otlp_http_default_logs")
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("file_storage wrote no database where migrate_from looks: %v", err)
	}
	cfg := createDefaultConfig()
	cfg.Directory, cfg.MigrateFrom = dir, old
	for round := range 2 {
		ext := startExt(t, NewFactory(), cfg)
		c, err := ext.GetClient(ctx, component.KindExporter, exporterID, "logs")
		if err != nil {
			t.Fatal(err)
		}
		expectClient(t, c, want, []string{"0", "49"})
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Fatalf("round %d: the file_storage database is still there after the migration: %v", round, err)
		}
		if err := ext.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A crash after the copy but before the database was deleted: the next start
// copies again (the same keys) and finishes.
func TestMigrationInterruptedIsRepeated(t *testing.T) {
	old, dir := t.TempDir(), t.TempDir()
	want := fileStorageBacklog(t, old)
	db := filepath.Join(old, "exporter_otlp_http_default_logs")
	saved, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	cfg := createDefaultConfig()
	cfg.Directory, cfg.MigrateFrom = dir, old
	ext := startExt(t, NewFactory(), cfg)
	if _, err = ext.GetClient(ctx, component.KindExporter, exporterID, "logs"); err != nil {
		t.Fatal(err)
	}
	_ = ext.Shutdown(ctx)
	if err = os.WriteFile(db, saved, 0o600); err != nil { // as if never deleted
		t.Fatal(err)
	}
	ext = startExt(t, NewFactory(), cfg)
	defer shutdownExt(t, ext)
	c, err := ext.GetClient(ctx, component.KindExporter, exporterID, "logs")
	if err != nil {
		t.Fatalf("repeating an interrupted migration: %v", err)
	}
	expectClient(t, c, want, nil)
}

// A queue_storage store that already holds other data is not overwritten by
// a file_storage database: the start fails and says why.
func TestMigrationRefusesToOverwrite(t *testing.T) {
	old, dir := t.TempDir(), t.TempDir()
	fileStorageBacklog(t, old)
	cfg := createDefaultConfig()
	cfg.Directory = dir
	ext := startExt(t, NewFactory(), cfg)
	c, err := ext.GetClient(ctx, component.KindExporter, exporterID, "logs")
	if err != nil {
		t.Fatal(err)
	}
	if err = c.Set(ctx, "qmv0", []byte("queue_storage's own")); err != nil {
		t.Fatal(err)
	}
	_ = ext.Shutdown(ctx)
	cfg.MigrateFrom = old
	ext = startExt(t, NewFactory(), cfg)
	defer shutdownExt(t, ext)
	_, err = ext.GetClient(ctx, component.KindExporter, exporterID, "logs")
	if err == nil || !strings.Contains(err.Error(), "already holds data") || !strings.Contains(err.Error(), old) {
		t.Fatalf("migration over existing data: %v, want a refusal naming %s", err, old)
	}
	if _, err := os.Stat(filepath.Join(old, "exporter_otlp_http_default_logs")); err != nil {
		t.Fatalf("the file_storage database was removed although nothing was migrated: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := createDefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	c := &Config{Directory: "", SegmentSize: 10, MemoryCacheSize: -1, MigrateFrom: ""}
	err := c.Validate()
	for _, want := range []string{"directory: must be set", "segment_size 10: must be 0 (sized from the volume) or at least 65536 bytes", "memory_cache_size -1: must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
	c = createDefaultConfig()
	c.MigrateFrom = c.Directory
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "migrate_from") {
		t.Errorf("migrate_from = directory: %v", err)
	}
}

// An exporter whose type replaced another (otlp_http_wire for otlp_http) takes
// over the old exporter's backlog with migrate_exporter_types; when both
// databases exist the start is refused rather than leaving one behind.
func TestMigrateFromAnotherExporterType(t *testing.T) {
	old, dir := t.TempDir(), t.TempDir()
	want := fileStorageBacklog(t, old)
	db := filepath.Join(old, "exporter_otlp_http_default_logs")
	cfg := createDefaultConfig()
	cfg.Directory, cfg.MigrateFrom = dir, old
	cfg.MigrateExporterTypes = map[string]string{"otlp_http_wire": "otlp_http"}
	wire := component.MustNewIDWithName("otlp_http_wire", "default")

	saved, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if err = os.WriteFile(filepath.Join(old, "exporter_otlp_http_wire_default_logs"), saved, 0o600); err != nil {
		t.Fatal(err)
	}
	ext := startExt(t, NewFactory(), cfg)
	_, err = ext.GetClient(ctx, component.KindExporter, wire, "logs")
	_ = ext.Shutdown(ctx)
	if err == nil || !strings.Contains(err.Error(), "leave the other's backlog behind") {
		t.Fatalf("two backlogs for one exporter: %v, want a refusal", err)
	}
	if err = os.Remove(filepath.Join(old, "exporter_otlp_http_wire_default_logs")); err != nil {
		t.Fatal(err)
	}

	ext = startExt(t, NewFactory(), cfg)
	c, err := ext.GetClient(ctx, component.KindExporter, wire, "logs")
	if err != nil {
		t.Fatal(err)
	}
	expectClient(t, c, want, []string{"0", "49"})
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("otlp_http's database is still there after otlp_http_wire took it over: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "exporter_otlp_http_wire_default_logs")); err != nil {
		t.Fatalf("the backlog is not under the new exporter's name: %v", err)
	}
	if err := ext.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	// Another signal of the same exporter, with no backlog, and an exporter
	// type not in the map are left alone.
	cfg.MigrateExporterTypes = map[string]string{"otlp_grpc_wire": "otlp_grpc"}
	ext = startExt(t, NewFactory(), cfg)
	defer shutdownExt(t, ext)
	for _, id := range []component.ID{wire, exporterID} {
		c, err := ext.GetClient(ctx, component.KindExporter, id, "metrics")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := c.Get(ctx, "qmv0"); got != nil {
			t.Fatalf("%s metrics: a queue appeared from nowhere", id)
		}
	}
}
