// SPDX-License-Identifier: Apache-2.0

//go:build reliability

package reliability_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// TestUpgradeFromFileStorageWithBacklog upgrades a relay whose volume holds a
// backlog: the previous gateway (otlp_http, persistent queue on file_storage)
// acknowledges records while its backend is down and stops; the shipped gateway
// (otlp_http_wire on queue_storage) starts on the same volume, takes the
// file_storage databases over (queue_storage's migrate_from and
// migrate_exporter_types) and delivers every acknowledged record.
func TestUpgradeFromFileStorageWithBacklog(t *testing.T) {
	dir := t.TempDir()
	r := newRig(t, filepath.Join(dir, "queue"))
	args := slices.Clone(r.Args())
	args[1] = e2e.PreviousGatewayConfig()

	r.sink.Refuse(true)
	old := e2e.Start(t, "", e2e.Options{Env: r.gw.Env, Args: args, ReadyTimeout: 90 * time.Second})
	s := r.sender(4, 2000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Send(ctx, e2e.EncodeChunks(0, 100, 100))
	time.Sleep(3 * time.Second)
	settle(t, cancel, s, time.Minute)
	acked := s.Acked()
	if _, err := old.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	backlog, err := e2e.ReadQueueDir(r.gw.QueueDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(acked) == 0 || backlog.Files["exporter_otlp_http_default_logs"] == 0 {
		t.Fatalf("no backlog to upgrade: %d records acknowledged, file_storage holds %v", len(acked), backlog.Files)
	}
	t.Logf("previous gateway: %d records acknowledged with the backend down, %d requests in file_storage (%v)", len(acked), backlog.Requests, backlog.Files)

	col := r.start(t)
	r.sink.Refuse(false)
	rep := expectDelivered(t, r.sink, acked, 2*time.Minute)
	t.Logf("shipped gateway: delivered %d of %d acknowledged records, %d duplicated", rep.Received, len(acked), rep.Duplicated)
	if _, err := os.Stat(filepath.Join(r.gw.QueueDir, "exporter_otlp_http_default_logs")); !os.IsNotExist(err) {
		t.Fatalf("the file_storage database is still in the queue directory after the upgrade: %v", err)
	}
	if !col.Running() {
		t.Fatal("the upgraded gateway exited")
	}
}
