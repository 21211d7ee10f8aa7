// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// migrationChildEnv makes the test binary a process that migrates
// <file_storage dir>\n<queue_storage dir> and exits, for kill -9 to interrupt.
const migrationChildEnv = "QUEUE_STORAGE_MIGRATION_CHILD"

// runMigrationChildIfAsked runs first in TestMain (runCrashWriterIfAsked).
func runMigrationChildIfAsked() {
	arg := os.Getenv(migrationChildEnv)
	if arg == "" {
		return
	}
	old, dir, _ := strings.Cut(arg, "\n")
	cfg := createDefaultConfig()
	cfg.Directory, cfg.MigrateFrom, cfg.SegmentSize = dir, old, minSegmentSize
	f := NewFactory()
	ext, err := f.Create(ctx, extensiontest.NewNopSettings(f.Type()), cfg)
	if err == nil {
		_, err = ext.(storage.Extension).GetClient(ctx, component.KindExporter, exporterID, "logs")
	}
	if err != nil {
		fmt.Println("migrate:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// kill -9 at random points of a migration, repeated on what it leaves: the
// start after the last kill finishes it, with every key of the database.
func TestKillNineWhileMigrating(t *testing.T) {
	old, dir := t.TempDir(), t.TempDir()
	want := fileStorageItems(t, old, 600, 16000, 0)
	db := filepath.Join(old, "exporter_otlp_http_default_logs")
	store := filepath.Join(dir, "exporter_otlp_http_default_logs")

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	midway := 0
	for round := 0; round < 8; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), migrationChildEnv+"="+old+"\n"+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if _, err := os.Stat(db); err != nil {
			break // the migration finished before the kill
		}
		if live, err := Inspect(store); err == nil && len(live) > 0 {
			midway++
		}
	}
	t.Logf("%d kills left a partial migration", midway)

	cfg := createDefaultConfig()
	cfg.Directory, cfg.MigrateFrom, cfg.SegmentSize = dir, old, minSegmentSize
	qs := startExt(t, NewFactory(), cfg)
	defer shutdownExt(t, qs)
	c, err := qs.GetClient(ctx, component.KindExporter, exporterID, "logs")
	if err != nil {
		t.Fatalf("the start after the kills: %v", err)
	}
	expectClient(t, c, want, nil)
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("the database is still there: %v", err)
	}
}
