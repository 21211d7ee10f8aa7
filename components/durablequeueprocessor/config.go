// SPDX-License-Identifier: Apache-2.0

package durablequeueprocessor // import "github.com/otelcol-relay/otelcol-relay/components/durablequeueprocessor"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
)

// Config of the durable_queue processor.
type Config struct {
	// Storage is the storage extension (queue_storage or file_storage) that
	// holds every request from the moment it is acknowledged until the rest of
	// the pipeline has delivered it.
	Storage component.ID `mapstructure:"storage"`
	// MaxBytes bounds what is held (encoded OTLP bytes, on disk). A request
	// that does not fit gets a retryable error, so the sender retries later or
	// on another replica.
	MaxBytes int64 `mapstructure:"max_bytes"`
	// MemoryBytes bounds how much of it is also kept decoded in memory, so it
	// is forwarded without being read back and decoded. Beyond it, requests
	// wait on disk only and are decoded when forwarded. At or above max_bytes
	// everything held is also in memory.
	MemoryBytes int64 `mapstructure:"memory_bytes"`
	// Workers forward batches concurrently; each waits for the exporter to
	// deliver (the exporter's sending_queue must be disabled).
	Workers int `mapstructure:"workers"`
	// BatchItems is the number of records (spans, data points) merged into one
	// forwarded request; a single larger request is forwarded whole.
	BatchItems int `mapstructure:"batch_items"`
	// FlushTimeout is how long a worker waits for BatchItems before it
	// forwards a smaller batch.
	FlushTimeout time.Duration `mapstructure:"flush_timeout"`

	// prevent unkeyed literal initialization
	_ struct{}
}

func createDefaultConfig() component.Config {
	return &Config{
		MaxBytes:     512 << 20,
		MemoryBytes:  64 << 20,
		Workers:      4,
		BatchItems:   2000,
		FlushTimeout: 200 * time.Millisecond,
	}
}

// Validate names the field and the value that are wrong.
func (c *Config) Validate() error {
	var errs []error
	if c.Storage == (component.ID{}) {
		errs = append(errs, errors.New("storage: must name a storage extension (queue_storage or file_storage)"))
	}
	if c.MaxBytes <= 0 {
		errs = append(errs, fmt.Errorf("max_bytes: %d must be positive", c.MaxBytes))
	}
	if c.MemoryBytes < 0 {
		errs = append(errs, fmt.Errorf("memory_bytes: %d must not be negative", c.MemoryBytes))
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers: %d must be at least 1", c.Workers))
	}
	if c.BatchItems < 1 {
		errs = append(errs, fmt.Errorf("batch_items: %d must be at least 1", c.BatchItems))
	}
	if c.FlushTimeout < 0 {
		errs = append(errs, fmt.Errorf("flush_timeout: %s must not be negative", c.FlushTimeout))
	}
	return errors.Join(errs...)
}
