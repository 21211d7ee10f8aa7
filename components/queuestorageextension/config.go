package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"errors"
	"fmt"
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
	// Fsync makes every write wait for the disk: it protects against a node
	// crash, not only a process crash, at a throughput cost.
	Fsync bool `mapstructure:"fsync"`
	// MigrateFrom is a file_storage directory. On start, a client whose
	// file_storage database exists there takes its keys over, then deletes it.
	MigrateFrom string `mapstructure:"migrate_from"`
}

const (
	// defaultSegmentSize is the largest segment the extension picks itself,
	// on volumes of 512 MiB and more.
	defaultSegmentSize = 8 << 20
	minSegmentSize     = 64 << 10
	// reserve is kept free at the end of each segment for updates and deletes
	// when the volume is full.
	reserve = 32 << 10
)

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
	if c.MigrateFrom != "" && c.MigrateFrom == c.Directory {
		errs = append(errs, fmt.Errorf("migrate_from %q: must differ from directory", c.MigrateFrom))
	}
	return errors.Join(errs...)
}
