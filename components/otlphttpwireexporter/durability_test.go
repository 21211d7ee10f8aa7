// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"

	"github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter/internal/metadata"
	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension/queuestoragetest"
)

const (
	durRequests = 20
	durRecords  = 50
)

func persistentQueue() configoptional.Optional[exporterhelper.QueueBatchConfig] {
	q := exporterhelper.NewDefaultQueueConfig()
	q.StorageID = &storageID
	q.NumConsumers = 2
	return configoptional.Some(q)
}

// fillBacklog consumes durRequests requests into exporter f's persistent
// queue on dir while the backend answers 503, then shuts everything down.
func fillBacklog(t *testing.T, b *backend, dir string, f exporter.Factory, cfg component.Config) {
	b.setRespond(func(int) (int, http.Header, []byte) { return http.StatusServiceUnavailable, nil, nil })
	host, stopStorage := queuestoragetest.Start(t, dir)
	exp := startLogs(t, f, "x", cfg, host, nil)
	for i := range durRequests {
		require.NoError(t, exp.ConsumeLogs(context.Background(), makeLogs(i*durRecords, durRecords)))
	}
	// the consumers are retrying: the backend was reached and refused
	require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.reqs >= 2 }, 30e9, 10e6)
	require.NoError(t, exp.Shutdown(context.Background()))
	stopStorage()
	assert.Empty(t, b.delivered())
}

// drain starts otlp_http_wire/x on dir with the backend up and checks that
// every record arrives exactly once.
func drain(t *testing.T, b *backend, dir string) {
	b.setRespond(nil)
	cfg := wireConfig(b)
	cfg.QueueConfig = persistentQueue()
	host, _ := queuestoragetest.Start(t, dir)
	exp := startLogs(t, NewFactory(), "x", cfg, host, nil)
	got := b.waitRecords(t, durRequests*durRecords)
	require.NoError(t, exp.Shutdown(context.Background()))
	seen := map[int64]int{}
	for _, s := range got {
		seen[s]++
	}
	for i := range int64(durRequests * durRecords) {
		assert.Equal(t, 1, seen[i], "record %d", i)
	}
	assert.Len(t, got, durRequests*durRecords, "no duplicates, nothing extra")
}

func TestPersistentQueueSurvivesRestart(t *testing.T) {
	b := newBackend(t)
	dir := t.TempDir()
	cfg := wireConfig(b)
	cfg.QueueConfig = persistentQueue()
	fillBacklog(t, b, dir, NewFactory(), cfg)
	require.DirExists(t, filepath.Join(dir, "exporter_otlp_http_wire_x_logs"))
	drain(t, b, dir)
}

// An upgrade from otlp_http/x to otlp_http_wire/x: renaming the client's
// queue directory is all it takes for the new exporter to deliver the backlog.
func TestDeliversBacklogOfOTLPHTTP(t *testing.T) {
	b := newBackend(t)
	dir := t.TempDir()
	f := otlphttpexporter.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlphttpexporter.Config)
	cfg.ClientConfig.Endpoint = b.srv.URL
	cfg.ClientConfig.TLS.CAFile = b.caFile
	cfg.QueueConfig = persistentQueue()
	fillBacklog(t, b, dir, f, cfg)
	old := filepath.Join(dir, "exporter_otlp_http_x_logs")
	require.DirExists(t, old)
	require.NoError(t, os.Rename(old, filepath.Join(dir, "exporter_otlp_http_wire_x_logs")))
	drain(t, b, dir)
}

// legacyEncoding writes items as an earlier release did.
type legacyEncoding struct {
	queueEncoding
	marshal func(*wireRequest) []byte
}

func (e legacyEncoding) Marshal(_ context.Context, req xexporterhelper.Request) ([]byte, error) {
	return e.marshal(req.(*wireRequest)), nil
}

// legacyFactory is otlp_http_wire as released with marshal's item format.
func legacyFactory(marshal func(*wireRequest) []byte) exporter.Factory {
	return exporter.NewFactory(metadata.Type, createDefaultConfig, exporter.WithLogs(
		func(ctx context.Context, set exporter.Settings, c component.Config) (exporter.Logs, error) {
			return newLogs(ctx, set, c.(*Config), legacyEncoding{queueEncoding{sig: logsSignal}, marshal})
		}, metadata.LogsStability))
}

// An upgrade from the earlier releases: their backlog (bare items, v1 items)
// is delivered.
func TestDeliversBacklogOfPreviousRelease(t *testing.T) {
	for name, marshal := range map[string]func(*wireRequest) []byte{"bare": marshalBare, "v1": marshalV1} {
		t.Run(name, func(t *testing.T) {
			b := newBackend(t)
			dir := t.TempDir()
			cfg := wireConfig(b)
			cfg.QueueConfig = persistentQueue()
			fillBacklog(t, b, dir, legacyFactory(marshal), cfg)
			drain(t, b, dir)
		})
	}
}
