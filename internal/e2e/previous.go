// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"strings"
)

// PreviousGatewayConfig writes PreviousGatewayYAML into dir and returns the file.
func PreviousGatewayConfig(dir string) (string, error) {
	return writeGatewayVariant(dir, "gateway-previous.yaml", PreviousGatewayYAML)
}

// PreviousGatewayYAML is config/gateway.yaml as it shipped before otlp_http_wire
// and queue_storage: upstream's otlp_http exporter with its persistent queue on
// file_storage in the queue directory itself. The upgrade test queues a backlog
// with it and lets the shipped file take that backlog over.
func PreviousGatewayYAML() (string, error) {
	text, err := shippedGateway()
	if err != nil {
		return "", err
	}
	start := strings.Index(text, "  queue_storage:\n")
	end := strings.Index(text, "      otlp_http_wire: otlp_http\n")
	if start < 0 || end < start {
		return "", fmt.Errorf("previous gateway: config/gateway.yaml has no queue_storage extension ending in migrate_exporter_types")
	}
	text = text[:start] + `  file_storage:
    directory: ${env:RELAY_QUEUE_DIR:-/var/lib/otelcol-relay/queue}
    create_directory: true
    timeout: 2s
    fsync: ${env:RELAY_QUEUE_FSYNC:-false}
    compaction:
      directory: ${env:RELAY_QUEUE_DIR:-/var/lib/otelcol-relay/queue}
      on_start: true
      on_rebound: true
` + text[end+len("      otlp_http_wire: otlp_http\n"):]
	return editGateway("previous gateway", text, []gatewayEdit{
		{"otlp_http_wire/default", "otlp_http/default", 4},
		{"storage: queue_storage\n", "storage: file_storage\n", 2},
		{"pprof, queue_storage, certwatch/default]", "pprof, file_storage, certwatch/default]", 1},
	})
}
