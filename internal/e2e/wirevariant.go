package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WireExporterConfig writes WireExporterYAML into dir and returns the file.
func WireExporterConfig(dir string) (string, error) {
	text, err := WireExporterYAML()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "gateway-wire.yaml")
	return p, os.WriteFile(p, []byte(text), 0o644)
}

// WireExporterYAML is config/gateway.yaml with its default backend's exporter
// replaced by otlp_http_wire (components/otlphttpwireexporter), whose persistent
// sending queue holds each request's OTLP wire bytes, on queue_storage: encoded
// once at intake, never decoded again. The bench's gateway-wire variants start
// from it, and RELAY_TEST_QUEUE=wire runs the reliability suite on it.
func WireExporterYAML() (string, error) {
	gw, err := os.ReadFile(filepath.Join(RepoRoot(), "config", "gateway.yaml"))
	if err != nil {
		return "", err
	}
	text := string(gw)
	if strings.Contains(text, "  otlp_http_wire/default:\n") {
		return text, nil // already shipped that way
	}
	for _, e := range []struct {
		old, new string
		n        int
	}{
		{"  otlp_http/default:\n", "  otlp_http_wire/default:\n", 1},
		{"exporters: [otlp_http/default]", "exporters: [otlp_http_wire/default]", 3},
		{"      storage: file_storage\n", "      storage: queue_storage/wire\n", 1},
		{"\nextensions:\n", "\nextensions:\n  queue_storage/wire:\n    directory: ${env:RELAY_QUEUE_DIR}/wire\n", 1},
		{"  extensions: [", "  extensions: [queue_storage/wire, ", 1},
	} {
		if got := strings.Count(text, e.old); got != e.n {
			return "", fmt.Errorf("otlp_http_wire variant: %q is in config/gateway.yaml %d times, want %d", e.old, got, e.n)
		}
		text = strings.ReplaceAll(text, e.old, e.new)
	}
	return text, nil
}
