// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// The requests of a phase take the namespaces in turn, the index finds any
// record's, and each backend expects the records of its route's namespaces.
func TestNamespacesOfTheLoad(t *testing.T) {
	ns := []string{"payments", "frontend"}
	steady := []e2e.Chunk{{First: 0, N: 100}, {First: 100, N: 100}, {First: 200, N: 100}}
	sat := []e2e.Chunk{{First: 300, N: 1000}, {First: 1300, N: 1000}}
	x := newNamespaceIndex(ns, sat, steady)
	for seq, want := range map[int64]string{0: "payments", 99: "payments", 100: "frontend", 250: "payments", 300: "payments", 1299: "payments", 1300: "frontend", 2299: "frontend", 2300: ""} {
		if got := x.of(seq); got != want {
			t.Errorf("record %d: namespace %q, want %q", seq, got, want)
		}
	}
	a := delivery{want: benchBackend{namespaces: []string{"payments"}}.wants}
	all := delivery{want: benchBackend{}.wants}
	if got := a.expected(steady, ns) + a.expected(sat, ns); got != 200+1000 {
		t.Errorf("payments' backend expects %d records", got)
	}
	if got := all.expected(steady, ns) + all.expected(sat, ns); got != 2300 {
		t.Errorf("an unrouted backend expects %d records", got)
	}
}

// The load alternates between the namespaces the routed variants select, and
// is e2e.EncodeChunks' byte for byte when there is only the fixture's.
func TestLoadNamespaces(t *testing.T) {
	defer func(v string) { *variantList = v }(*variantList)
	*variantList = "gateway,gateway-filter"
	if got := loadNamespaces(); !slices.Equal(got, []string{"payments"}) {
		t.Errorf("no route: %q", got)
	}
	*variantList = "gateway,gateway-routed,gateway-pipeline"
	if got := loadNamespaces(); !slices.Equal(got, []string{"payments", "frontend"}) {
		t.Errorf("routed: %q", got)
	}
	plain, same := e2e.EncodeChunks(0, 2, 10), encodeChunks(0, 2, 10, []string{"payments"})
	for i := range plain {
		if !bytes.Equal(plain[i].Body, same[i].Body) {
			t.Errorf("chunk %d differs from e2e.EncodeChunks'", i)
		}
	}
	two := encodeChunks(0, 2, 10, []string{"payments", "frontend"})
	for i, want := range []string{"payments", "frontend"} {
		ld := decodeChunk(t, two[i])
		got, _ := ld.ResourceLogs().At(0).Resource().Attributes().Get("k8s.namespace.name")
		kube, _ := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().Map().Get("kubernetes")
		inBody, _ := kube.Map().Get("namespace_name")
		if got.Str() != want || inBody.Str() != want || ld.LogRecordCount() != 10 {
			t.Errorf("chunk %d: namespace %q, in the body %q, %d records; want %q", i, got.Str(), inBody.Str(), ld.LogRecordCount(), want)
		}
		if len(two[i].Body) < len(plain[i].Body)*9/10 || len(two[i].Body) > len(plain[i].Body)*11/10 {
			t.Errorf("chunk %d: %d bytes, the fixture's %d", i, len(two[i].Body), len(plain[i].Body))
		}
	}
}

// Every backend a variant adds is an entry of its overlays that reads the
// environment backendEnv sets, routed to the namespaces it expects.
func TestVariantBackendsAreConfigured(t *testing.T) {
	for v, bs := range variantBackends {
		var sb strings.Builder
		for _, o := range variantOverlays[v] {
			b, err := os.ReadFile(filepath.Join("variants", o))
			if err != nil {
				t.Fatal(err)
			}
			sb.Write(b)
		}
		text := sb.String()
		for _, b := range bs {
			for _, kv := range backendEnv(b.name, "https://x", &e2e.BackendTLS{}) {
				if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "OTEL_EXPORTER_") && !strings.Contains(text, "${env:"+k+"}") {
					t.Errorf("%s: %s's entry does not read %s", v, b.name, k)
				}
			}
			entry := "- name: " + b.name + "\n"
			if !strings.Contains(text, entry) {
				t.Errorf("%s: no backends entry %s", v, b.name)
			}
			if len(b.namespaces) > 0 && !strings.Contains(text, "namespaces: ["+strings.Join(b.namespaces, ", ")+"]") {
				t.Errorf("%s: %s's route is not namespaces %q", v, b.name, b.namespaces)
			}
		}
	}
}

func decodeChunk(t *testing.T, c e2e.Chunk) plog.Logs {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(c.Body))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	req := plogotlp.NewExportRequest()
	if err := req.UnmarshalProto(raw); err != nil {
		t.Fatal(err)
	}
	return req.Logs()
}
