package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PreviousGatewayConfig writes PreviousGatewayYAML into dir and returns the file.
func PreviousGatewayConfig(dir string) (string, error) {
	text, err := PreviousGatewayYAML()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "gateway-previous.yaml")
	return p, os.WriteFile(p, []byte(text), 0o644)
}

// PreviousGatewayYAML is config/gateway.yaml as it shipped before otlp_http_wire
// and queue_storage: upstream's otlp_http exporter with its persistent queue on
// file_storage in the queue directory itself. The upgrade test queues a backlog
// with it and lets the shipped file take that backlog over.
func PreviousGatewayYAML() (string, error) {
	gw, err := os.ReadFile(filepath.Join(RepoRoot(), "config", "gateway.yaml"))
	if err != nil {
		return "", err
	}
	text := string(gw)
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
	for _, e := range []struct {
		old, new string
		n        int
	}{
		{"otlp_http_wire/default", "otlp_http/default", 4},
		{"storage: queue_storage\n", "storage: file_storage\n", 2},
		{"pprof, queue_storage, certwatch/default]", "pprof, file_storage, certwatch/default]", 1},
	} {
		if got := strings.Count(text, e.old); got != e.n {
			return "", fmt.Errorf("previous gateway: %q is in config/gateway.yaml %d times, want %d", e.old, got, e.n)
		}
		text = strings.ReplaceAll(text, e.old, e.new)
	}
	return text, nil
}
