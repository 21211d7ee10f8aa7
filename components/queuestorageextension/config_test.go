// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"errors"
	"strings"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), []configtest.Case{
		{Name: "", Expected: &Config{Directory: "/var/lib/otelcol-relay/queue", MemoryCacheSize: 32 << 20}},
		{
			Name: "custom",
			Expected: &Config{
				Directory:       "/var/lib/otelcol-relay/queue-v2",
				SegmentSize:     1 << 20,
				MemoryCacheSize: 0,
				Fsync:           true,
				MigrateFrom:     "/var/lib/otelcol-relay/queue",

				MigrateExporterTypes: map[string]string{"otlp_http_wire": "otlp_http"},
			},
		},
		{Name: "percentage", Expected: &Config{Directory: "/var/lib/otelcol-relay/queue", MemoryCacheSize: 32 << 20, MemoryCachePercentage: 6}},

		{Name: "no_directory", WantErr: "directory: must be set"},
		{Name: "small_segments", WantErr: "segment_size 10: must be 0 (sized from the volume) or at least 65536 bytes"},
		{Name: "negative_memory_cache", WantErr: "memory_cache_size -1: must not be negative"},
		{Name: "cache_percentage_too_high", WantErr: "memory_cache_percentage 30: must be at most 25"},
		{Name: "migrate_from_itself", WantErr: `migrate_from "/var/lib/otelcol-relay/queue": must differ from directory`},
		{Name: "types_without_migrate_from", WantErr: "migrate_exporter_types: needs migrate_from"},
		{Name: "bad_exporter_type", WantErr: `migrate_exporter_types::otlp_http_wire: "otlp http" is not a component type`},
		{Name: "misspelt", WantErr: "invalid keys: segment_sise"},
	})
}

func TestCacheSize(t *testing.T) {
	total := func() (uint64, string, error) { return 512 << 20, "memory.max", nil }
	for _, c := range []struct {
		cfg  Config
		want int64
	}{
		{Config{MemoryCacheSize: 32 << 20}, 32 << 20},
		{Config{MemoryCacheSize: 0}, 0},
		{Config{MemoryCacheSize: 32 << 20, MemoryCachePercentage: 6}, 32212254},
		{Config{MemoryCacheSize: 0, MemoryCachePercentage: 25}, 128 << 20},
	} {
		got, _, err := c.cfg.cacheSize(total)
		if err != nil || got != c.want {
			t.Errorf("%+v: %d, %v; want %d", c.cfg, got, err, c.want)
		}
	}
	failing := func() (uint64, string, error) { return 0, "", errors.New("no /proc/meminfo") }
	if _, _, err := (&Config{MemoryCachePercentage: 6}).cacheSize(failing); err == nil || !strings.Contains(err.Error(), "memory_cache_percentage 6: cannot determine the memory limit: no /proc/meminfo") {
		t.Errorf("error: %v", err)
	}
	if _, _, err := (&Config{MemoryCacheSize: 1}).cacheSize(failing); err != nil {
		t.Errorf("the limit was read without memory_cache_percentage: %v", err)
	}
}
