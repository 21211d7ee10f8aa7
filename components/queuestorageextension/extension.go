// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-relay/otelcol-relay/components/internal/handoff"
	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension/internal/metadata"
)

type queueStorage struct {
	cfg    *Config
	logger *zap.Logger
	cache  *cacheBudget
	// handoff is shared by every client: an exporter gives the items it
	// encodes here, the client that stores one claims it (handoff.Provider).
	handoff handoff.Registry

	// maxRecord is passed to every store (storeOptions.maxRecord).
	maxRecord int

	telemetry *metadata.TelemetryBuilder

	mu      sync.Mutex
	clients map[*store]client
}

// client is what a store's series are labelled with.
type client struct {
	exporter metric.MeasurementOption // nil for another kind of component: its keys are no queue's
}

var (
	_ storage.Extension = (*queueStorage)(nil)
	_ handoff.Provider  = (*queueStorage)(nil)
)

// Handoff is where an exporter gives the queue items it will never write to
// again, so that they are stored without a copy.
func (q *queueStorage) Handoff() *handoff.Registry { return &q.handoff }

func newExtension(set extension.Settings, cfg *Config, total func() (uint64, string, error)) (*queueStorage, error) {
	size, source, err := cfg.cacheSize(total)
	if err != nil {
		return nil, err
	}
	if cfg.MemoryCachePercentage > 0 {
		set.Logger.Info("queue_storage: memory cache sized from the memory limit",
			zap.Uint32("memory_cache_percentage", cfg.MemoryCachePercentage), zap.Int64("memory_cache_size", size), zap.String("limit_from", source))
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	q := &queueStorage{
		cfg: cfg, logger: set.Logger, clients: map[*store]client{},
		cache: &cacheBudget{max: size}, telemetry: tb,
	}
	if err := tb.RegisterQueueStorageOldestItemAgeCallback(q.observeAges); err != nil {
		tb.Shutdown()
		return nil, err
	}
	return q, nil
}

// observeAges reports each exporter queue's oldest item age at collection
// time, so the gauge is never older than the scrape.
func (q *queueStorage) observeAges(_ context.Context, o metric.Float64Observer) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for s, c := range q.clients {
		if c.exporter != nil {
			o.Observe(s.oldestItemAge().Seconds(), c.exporter)
		}
	}
	return nil
}

func (q *queueStorage) Start(context.Context, component.Host) error { return nil }

// Shutdown closes the clients their owners did not close.
func (q *queueStorage) Shutdown(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	var errs []error
	for s := range q.clients {
		errs = append(errs, s.Close(ctx))
	}
	q.clients = map[*store]client{}
	q.telemetry.Shutdown()
	return errors.Join(errs...)
}

// GetClient opens the store of one component and signal, in a subdirectory
// named as file_storage names its database file, and takes over that file's
// keys when migrate_from points at a file_storage directory that holds it.
func (q *queueStorage) GetClient(_ context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	raw := clientName(kind, id.Type().String(), id.Name(), name)
	if err := os.MkdirAll(q.cfg.Directory, 0o750); err != nil {
		return nil, fmt.Errorf("queue_storage: creating %s: %w", q.cfg.Directory, err)
	}
	s, err := openStore(filepath.Join(q.cfg.Directory, raw), storeOptions{
		segmentSize: SegmentSize(q.cfg.SegmentSize, volumeBytes(q.cfg.Directory)),
		reserve:     reserve,
		fsync:       q.cfg.Fsync,
		cache:       q.cache,
		handoff:     &q.handoff,
		logger:      q.logger.With(zap.String("client", raw)),
		maxRecord:   q.maxRecord,
	})
	if err != nil {
		return nil, err
	}
	if q.cfg.MigrateFrom != "" {
		src, err := q.migrationSource(kind, id, name, raw)
		if err == nil {
			err = migrateFileStorage(s, src, q.logger)
		}
		if err != nil {
			_ = s.Close(context.Background())
			return nil, err
		}
	}
	var c client
	if kind == component.KindExporter {
		c.exporter = metric.WithAttributeSet(attribute.NewSet(
			attribute.String("exporter", id.String()), attribute.String("data_type", name)))
	}
	q.mu.Lock()
	q.clients[s] = c
	q.mu.Unlock()
	return &trackedClient{store: s, ext: q}, nil
}

// migrationSource is the file_storage database a client takes over: the one
// named like the client, or, for an exporter whose type replaced another
// (migrate_exporter_types), the old exporter's of the same name and signal.
// Both existing would leave one backlog behind: that is refused.
func (q *queueStorage) migrationSource(kind component.Kind, id component.ID, name, raw string) (string, error) {
	own := filepath.Join(q.cfg.MigrateFrom, raw)
	was, ok := q.cfg.MigrateExporterTypes[id.Type().String()]
	if kind != component.KindExporter || !ok {
		return own, nil
	}
	old := filepath.Join(q.cfg.MigrateFrom, clientName(kind, was, id.Name(), name))
	_, ownErr := os.Stat(own)
	if _, err := os.Stat(old); err != nil {
		return own, nil
	}
	if ownErr == nil {
		return "", fmt.Errorf("queue_storage: both %s and %s (migrate_exporter_types %s: %s) hold a queue for %s; migrating one would leave the other's backlog behind: deliver one of them first", own, old, id.Type(), was, id)
	}
	return old, nil
}

// clientName names a client's directory as file_storage names its database.
func clientName(kind component.Kind, typ, idName, name string) string {
	raw := fmt.Sprintf("%s_%s_%s", kindString(kind), typ, idName)
	if name != "" {
		raw += "_" + name
	}
	return sanitize(raw)
}

// trackedClient forgets its store in the extension when the owner closes it.
type trackedClient struct {
	*store
	ext *queueStorage
}

func (c *trackedClient) Close(ctx context.Context) error {
	c.ext.mu.Lock()
	delete(c.ext.clients, c.store)
	c.ext.mu.Unlock()
	return c.store.Close(ctx)
}

// kindString and sanitize name clients exactly as file_storage does
// (filestorage v0.165.1, extension.go), so migrate_from finds the same file.
func kindString(k component.Kind) string {
	switch k {
	case component.KindReceiver:
		return "receiver"
	case component.KindProcessor:
		return "processor"
	case component.KindExporter:
		return "exporter"
	case component.KindExtension:
		return "extension"
	case component.KindConnector:
		return "connector"
	default:
		return "other"
	}
}

func sanitize(name string) string {
	var b strings.Builder
	for _, c := range name {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' {
			b.WriteRune(c)
		} else {
			fmt.Fprintf(&b, "~%04X", c)
		}
	}
	return b.String()
}
