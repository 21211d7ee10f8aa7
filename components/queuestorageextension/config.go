// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.opentelemetry.io/collector/component"
)

// Config of the queue_storage extension.
type Config struct {
	// Directory holds one subdirectory of segments per client (exporter and
	// signal). Created if missing.
	Directory string `mapstructure:"directory"`
	// SegmentSize is the size each segment file is allocated with; 0 sizes it
	// from the volume (SegmentSize). A segment is deleted once no key in it is
	// alive.
	SegmentSize int64 `mapstructure:"segment_size"`
	// MemoryCacheSize bounds the values kept in memory (all clients together),
	// so that the queue reads a fresh item back without a read from disk.
	MemoryCacheSize int64 `mapstructure:"memory_cache_size"`
	// MemoryCachePercentage, when above 0, sizes the cache instead as this
	// share of the memory the process may use (the container's limit, found
	// as memory_limiter finds it): durability at the cost of memory where
	// there is memory, with the same share of a small pod as of a large one.
	MemoryCachePercentage uint32 `mapstructure:"memory_cache_percentage"`
	// Fsync makes every write wait for the disk: it protects against a node
	// crash, not only a process crash, at a throughput cost.
	Fsync bool `mapstructure:"fsync"`
	// MigrateFrom is a file_storage directory. On start, a client whose
	// file_storage database exists there takes its keys over, then deletes it.
	MigrateFrom string `mapstructure:"migrate_from"`
	// MigrateExporterTypes maps an exporter type to the type it replaced in the
	// configuration: with migrate_from, an exporter of the new type whose own
	// database is not there takes over the database of the exporter of the old
	// type with the same name and signal (its queue's backlog). The new exporter
	// must read the old one's queue items (otlp_http_wire reads otlp_http's).
	MigrateExporterTypes map[string]string `mapstructure:"migrate_exporter_types"`
}

const (
	// defaultSegmentSize is the largest segment the extension picks itself,
	// on volumes of 512 MiB and more.
	defaultSegmentSize = 8 << 20
	minSegmentSize     = 64 << 10
	// reserve is kept free at the end of each segment for updates and deletes
	// when the volume is full.
	reserve = 32 << 10
	// maxCachePercentage keeps the cache well under memory_limiter's soft
	// limit (80% - 20% spike by default).
	maxCachePercentage = 25
)

// cacheSize is the memory cache's budget: memory_cache_percentage of total
// when set, memory_cache_size otherwise.
// It also names where the memory limit came from, for the log.
func (c *Config) cacheSize(total func() (uint64, string, error)) (int64, string, error) {
	if c.MemoryCachePercentage == 0 {
		return c.MemoryCacheSize, "", nil
	}
	t, source, err := total()
	if err != nil {
		return 0, "", fmt.Errorf("memory_cache_percentage %d: cannot determine the memory limit: %w", c.MemoryCachePercentage, err)
	}
	// memory_limiter's arithmetic for its percentages.
	return int64(uint64(c.MemoryCachePercentage) * t / 100), source, nil
}

func createDefaultConfig() *Config {
	return &Config{
		Directory:       "/var/lib/otelcol-relay/queue",
		MemoryCacheSize: 32 << 20,
	}
}

// Validate checks the directory and the sizes.
func (c *Config) Validate() error {
	var errs []error
	if c.Directory == "" {
		errs = append(errs, errors.New("directory: must be set"))
	}
	if c.SegmentSize != 0 && c.SegmentSize < minSegmentSize {
		errs = append(errs, fmt.Errorf("segment_size %d: must be 0 (sized from the volume) or at least %d bytes", c.SegmentSize, minSegmentSize))
	}
	if c.MemoryCacheSize < 0 {
		errs = append(errs, fmt.Errorf("memory_cache_size %d: must not be negative", c.MemoryCacheSize))
	}
	if c.MemoryCachePercentage > maxCachePercentage {
		errs = append(errs, fmt.Errorf("memory_cache_percentage %d: must be at most %d (memory_limiter refuses data from 60%% of the limit by default, and queued values count there)", c.MemoryCachePercentage, maxCachePercentage))
	}
	if c.MigrateFrom != "" && c.MigrateFrom == c.Directory {
		errs = append(errs, fmt.Errorf("migrate_from %q: must differ from directory", c.MigrateFrom))
	}
	if len(c.MigrateExporterTypes) > 0 && c.MigrateFrom == "" {
		errs = append(errs, errors.New("migrate_exporter_types: needs migrate_from, the directory to migrate from"))
	}
	for _, now := range slices.Sorted(maps.Keys(c.MigrateExporterTypes)) {
		was := c.MigrateExporterTypes[now]
		for _, t := range []string{now, was} {
			if _, err := component.NewType(t); err != nil {
				errs = append(errs, fmt.Errorf("migrate_exporter_types::%s: %q is not a component type: %w", now, t, err))
			}
		}
		if now == was {
			errs = append(errs, fmt.Errorf("migrate_exporter_types::%s: maps to itself", now))
		}
	}
	return errors.Join(errs...)
}
