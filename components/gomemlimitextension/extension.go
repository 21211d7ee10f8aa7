// SPDX-License-Identifier: Apache-2.0

// Package gomemlimitextension sets the Go runtime's soft memory limit (what the
// GOMEMLIMIT variable sets) to the same share of the container's memory limit that
// memory_limiter uses as its hard limit, read from the same cgroup files, so that
// changing only resources.limits.memory moves both together. Kubernetes cannot
// compute "80% of limits.memory" into an environment variable (a memory
// resourceFieldRef divisor must be 1, 1Ki, 1Mi, ...), which is why this is done in
// the process. An explicit GOMEMLIMIT in the environment wins and is left alone.
package gomemlimitextension // import "github.com/otelcol-relay/otelcol-relay/components/gomemlimitextension"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"

	"github.com/otelcol-relay/otelcol-relay/components/gomemlimitextension/internal/metadata"
	"github.com/otelcol-relay/otelcol-relay/components/internal/memtotal"
)

// Config of the gomemlimit extension.
type Config struct {
	// LimitPercentage is the share of the container (cgroup) memory limit, or of
	// the machine's memory without one, given to the Go runtime as its soft limit.
	// Keep it equal to memory_limiter's limit_percentage.
	LimitPercentage uint32 `mapstructure:"limit_percentage"`

	// GCPercent, when not 0, is the GC target (what GOGC sets): the heap may
	// grow by this percentage of the live heap before a collection. A higher
	// value trades memory for CPU; the memory limit above still makes the GC
	// run as often as it must near the limit. A GOGC variable in the
	// environment wins.
	GCPercent int `mapstructure:"gc_percent"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks the percentage.
func (c *Config) Validate() error {
	if c.LimitPercentage == 0 || c.LimitPercentage > 100 {
		return fmt.Errorf("limit_percentage: %d must be between 1 and 100", c.LimitPercentage)
	}
	if c.GCPercent < 0 || c.GCPercent > 1000 {
		return fmt.Errorf("gc_percent: %d must be between 0 (leave the runtime's) and 1000", c.GCPercent)
	}
	return nil
}

// NewFactory returns the factory of the gomemlimit extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(
		metadata.Type,
		func() component.Config { return &Config{LimitPercentage: 80} },
		func(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
			return &gomemlimit{cfg: cfg.(*Config), logger: set.Logger, paths: memtotal.Proc, getenv: os.LookupEnv}, nil
		},
		metadata.ExtensionStability,
	)
}

type gomemlimit struct {
	cfg    *Config
	logger *zap.Logger
	paths  memtotal.Paths
	getenv func(string) (string, bool)
	// previous is the limit before Start, restored on Shutdown.
	previous int64
	set      bool
	// previousGC is the GC percent before Start, restored on Shutdown.
	previousGC int
	setGC      bool
}

func (g *gomemlimit) Start(context.Context, component.Host) error {
	if g.cfg.GCPercent != 0 {
		if v, ok := g.getenv("GOGC"); ok && v != "" {
			g.logger.Info("GOGC is set in the environment; leaving the GC target as it is", zap.String("GOGC", v))
		} else {
			g.previousGC, g.setGC = debug.SetGCPercent(g.cfg.GCPercent), true
			g.logger.Info("GC target set", zap.Int("gc_percent", g.cfg.GCPercent))
		}
	}
	if v, ok := g.getenv("GOMEMLIMIT"); ok && v != "" {
		g.logger.Info("GOMEMLIMIT is set in the environment; leaving the Go memory limit as it is",
			zap.String("GOMEMLIMIT", v))
		return nil
	}
	total, source, err := memtotal.Total(g.paths)
	if err != nil {
		return fmt.Errorf("gomemlimit: cannot determine the memory limit: %w", err)
	}
	// Same arithmetic as memory_limiter's percentage mode, so both name the same byte.
	limit := uint64(g.cfg.LimitPercentage) * total / 100
	if limit == 0 || limit > math.MaxInt64 {
		return errors.New("gomemlimit: computed limit is out of range")
	}
	g.previous, g.set = debug.SetMemoryLimit(int64(limit)), true
	g.logger.Info("Go memory limit set from the container memory limit",
		zap.Uint64("total_memory_mib", total>>20),
		zap.Uint32("limit_percentage", g.cfg.LimitPercentage),
		zap.Uint64("gomemlimit_mib", limit>>20),
		zap.String("source", source))
	return nil
}

func (g *gomemlimit) Shutdown(context.Context) error {
	if g.setGC {
		debug.SetGCPercent(g.previousGC)
		g.setGC = false
	}
	if g.set {
		debug.SetMemoryLimit(g.previous)
		g.set = false
	}
	return nil
}
