package queuestorageextension

import (
	"testing"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-relay/otelcol-relay/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	typ := NewFactory().Type()
	configtest.Run(t, NewFactory(), []configtest.Case{
		{
			ID:       component.NewID(typ),
			Expected: &Config{Directory: "/var/lib/otelcol-relay/queue", SegmentSize: 8 << 20, MemoryCacheSize: 32 << 20},
		},
		{
			ID: component.NewIDWithName(typ, "custom"),
			Expected: &Config{
				Directory:       "/var/lib/otelcol-relay/queue-v2",
				SegmentSize:     1 << 20,
				MemoryCacheSize: 0,
				Fsync:           true,
				MigrateFrom:     "/var/lib/otelcol-relay/queue",
			},
		},

		{ID: component.NewIDWithName(typ, "no_directory"), WantErr: "directory: must be set"},
		{ID: component.NewIDWithName(typ, "small_segments"), WantErr: "segment_size 10: must be at least 65536 bytes"},
		{ID: component.NewIDWithName(typ, "negative_memory_cache"), WantErr: "memory_cache_size -1: must not be negative"},
		{ID: component.NewIDWithName(typ, "migrate_from_itself"), WantErr: `migrate_from "/var/lib/otelcol-relay/queue": must differ from directory`},
		{ID: component.NewIDWithName(typ, "misspelt"), WantErr: "invalid keys: segment_sise"},
	})
}
