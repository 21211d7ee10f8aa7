package queuestorageextension

import (
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

		{Name: "no_directory", WantErr: "directory: must be set"},
		{Name: "small_segments", WantErr: "segment_size 10: must be 0 (sized from the volume) or at least 65536 bytes"},
		{Name: "negative_memory_cache", WantErr: "memory_cache_size -1: must not be negative"},
		{Name: "migrate_from_itself", WantErr: `migrate_from "/var/lib/otelcol-relay/queue": must differ from directory`},
		{Name: "types_without_migrate_from", WantErr: "migrate_exporter_types: needs migrate_from"},
		{Name: "bad_exporter_type", WantErr: `migrate_exporter_types::otlp_http_wire: "otlp http" is not a component type`},
		{Name: "misspelt", WantErr: "invalid keys: segment_sise"},
	})
}
