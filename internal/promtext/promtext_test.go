// SPDX-License-Identifier: Apache-2.0

package promtext

import (
	"strings"
	"testing"
)

const exposition = `# HELP otelcol_receiver_accepted_log_records_total Records accepted.
# TYPE otelcol_receiver_accepted_log_records_total counter
otelcol_receiver_accepted_log_records_total{receiver="otlp_http_pooled",transport="http"} 10
otelcol_receiver_accepted_log_records_total{receiver="otlp",transport="grpc"} 5
# HELP otelcol_exporter_queue_size Queue size.
# TYPE otelcol_exporter_queue_size gauge
otelcol_exporter_queue_size{data_type="logs",exporter="otlp_http/default"} 2048
otelcol_exporter_queue_size{data_type="metrics",exporter="otlp_http/default"} 7
# TYPE otelcol_processor_federation_types_metadata_age_seconds gauge
otelcol_processor_federation_types_metadata_age_seconds 3.5
`

func TestSum(t *testing.T) {
	m, err := Parse(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		match     map[string]string
		want      float64
		wantFound bool
	}{
		{"otelcol_receiver_accepted_log_records", nil, 15, true},
		{"otelcol_receiver_accepted_log_records", map[string]string{"transport": "grpc"}, 5, true},
		{"otelcol_receiver_accepted_log_records", map[string]string{"receiver": "otlp_http_pooled"}, 10, true},
		{"otelcol_exporter_queue_size", map[string]string{"data_type": "logs"}, 2048, true},
		{"otelcol_exporter_queue_size", map[string]string{"data_type": "traces"}, 0, false},
		{"otelcol_processor_federation_types_metadata_age", nil, 3.5, true},
		{"otelcol_exporter_queue", nil, 0, false}, // a prefix is not a family
	} {
		got, found := m.Sum(tc.name, tc.match)
		if got != tc.want || found != tc.wantFound {
			t.Errorf("Sum(%s, %v) = %v, %v; want %v, %v", tc.name, tc.match, got, found, tc.want, tc.wantFound)
		}
	}
	if !m.Has("otelcol_receiver_accepted_log_records") || m.Has("otelcol_nothing") {
		t.Error("Has disagrees with the exposition")
	}
	if d := m.Dump("otelcol_exporter_"); !strings.Contains(d, `data_type="logs"`) || strings.Contains(d, "receiver") {
		t.Errorf("Dump(otelcol_exporter_):\n%s", d)
	}
}
