// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/components/backendsconverter"
)

// backendExporterDocs are where a reader learns what a `backends:` entry becomes.
var backendExporterDocs = []string{
	"config/README.md",
	"components/backendsconverter/README.md",
	"deploy/components/backends/backends.yaml",
	"deploy/components/federation-backends/backends.yaml",
}

// exporterOfBackend matches an exporter id a doc gives a backend entry, as
// `otlp_grpc/<name>` or with the example's name, and the `otlp_<protocol>` shorthand,
// which reads as otlp_http for http.
var exporterOfBackend = regexp.MustCompile(`\b(otlp_[a-z_]+|otlp_<protocol>)/(?:<name>|corp\b)`)

// TestDocsNameTheBackendsExporters: the exporter types the docs say a backend
// entry becomes are the ones the converter writes, for each protocol.
func TestDocsNameTheBackendsExporters(t *testing.T) {
	cfg := map[string]any{
		"backends": []any{
			map[string]any{"name": "g", "endpoint": "https://g.example:4317", "protocol": "grpc"},
			map[string]any{"name": "h", "endpoint": "https://h.example:4318", "protocol": "http"},
		},
		"service": map[string]any{"pipelines": map[string]any{"logs": map[string]any{"exporters": []any{}}}},
	}
	if err := backendsconverter.Expand(cfg, func(string) (string, bool) { return "", false }); err != nil {
		t.Fatal(err)
	}
	exporters, _ := cfg["exporters"].(map[string]any)
	var want []string
	for id := range exporters {
		typ, _, _ := strings.Cut(id, "/")
		want = append(want, typ)
	}
	slices.Sort(want)
	if len(want) != 2 {
		t.Fatalf("two backends expanded into exporters %v", want)
	}
	root := repoRoot(t)
	for _, doc := range backendExporterDocs {
		raw, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		var named []string
		for _, m := range exporterOfBackend.FindAllStringSubmatch(string(raw), -1) {
			if !slices.Contains(named, m[1]) {
				named = append(named, m[1])
			}
		}
		slices.Sort(named)
		if !slices.Equal(named, want) {
			t.Errorf("%s says a backend entry becomes %v; the converter writes %v", doc, named, want)
		}
	}
}
