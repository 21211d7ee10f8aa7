// SPDX-License-Identifier: Apache-2.0

package safeconfigprovider

import (
	"strings"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/components/internal/safeconfig"
)

// confmap unflattens "::" keys before any component reads them: a flat key is
// the same field as the nested one, and is judged the same.
func TestFlatKeysAreTheFieldsTheyName(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"flat header", "exporters:\n  otlp_grpc/corp: {\"headers::X-Api-Key\": " + secret + "}\n",
			"exporters::otlp_grpc/corp: headers::X-Api-Key is a credential written as a literal value"},
		{"flat from the top", "\"exporters::otlp_grpc/corp::headers::X-Api-Key\": " + secret + "\n",
			"exporters::otlp_grpc/corp: headers::X-Api-Key is a credential written as a literal value"},
		{"flat key_pem", "exporters:\n  otlp_grpc/corp: {\"tls::key_pem\": " + secret + "}\n",
			"exporters::otlp_grpc/corp::tls::key_pem is a credential written as a literal value"},
		{"header key in another case", "exporters:\n  otlp_grpc/corp: {Headers: {Authorization: " + secret + "}}\n",
			"exporters::otlp_grpc/corp: Headers::Authorization is a credential written as a literal value"},
		{"flat http_headers", "receivers:\n  prometheus:\n    config:\n      scrape_configs:\n        - {job_name: a, \"http_headers::X-Api-Key::values\": [" + secret + "]}\n",
			"scrape_configs[0]::http_headers::X-Api-Key::values[0] is a credential written as a literal value"},
		{"backends entry, named", "backends:\n  - {name: vendor, \"exporter::headers::X-Api-Key\": " + secret + "}\n",
			"backends[0] (vendor)::exporter: headers::X-Api-Key is a credential written as a literal value"},
		{"written twice", "exporters:\n  otlp_grpc/corp: {\"headers::X-Api-Key\": \"${env:A}\", headers: {X-Api-Key: \"${env:B}\"}}\n",
			`exporters::otlp_grpc/corp::headers::X-Api-Key is written more than once (nested and as a flat "::" key)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := retrieve(t, tc.doc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error leaks the credential: %v", err)
			}
		})
	}
}

// The record safeconfigconverter checks for shared variables holds a flat
// header, and one under a headers key in another case, like a nested one.
func TestRecordsFlatHeaderEnvs(t *testing.T) {
	ret, err := retrieve(t, `exporters:
  otlp_grpc/vendor:
    "headers::Authorization": ${env:OTEL_EXPORTER_CORP_AUTHORIZATION}
    headers: {X-Tenant: "${env:TENANT}"}
  otlp_http/vendor:
    Headers: {X-Api-Key: "${env:KEY}"}
"exporters::otlp/vendor::headers::X-Token": ${env:TOKEN}
`)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := ret.AsRaw()
	if err != nil {
		t.Fatal(err)
	}
	rec := raw.(map[string]any)[safeconfig.HeaderEnvKey].(map[string]any)
	for id, want := range map[string]map[string]any{
		"otlp_grpc/vendor": {"Authorization": "OTEL_EXPORTER_CORP_AUTHORIZATION", "X-Tenant": "TENANT"},
		"otlp_http/vendor": {"X-Api-Key": "KEY"},
		"otlp/vendor":      {"X-Token": "TOKEN"},
	} {
		got, _ := rec[id].(map[string]any)
		if len(got) != len(want) {
			t.Fatalf("%s: recorded %v, want %v", id, got, want)
		}
		for h, env := range want {
			if got[h] != env {
				t.Fatalf("%s: recorded %v, want %v", id, got, want)
			}
		}
	}
}

// A list of service lists written flat still makes the file one that sets lists.
func TestFlatServiceListsRecorded(t *testing.T) {
	ret, err := retrieve(t, "\"service::pipelines::logs::exporters\": [otlp_grpc/b]\n")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := ret.AsRaw()
	if _, ok := raw.(map[string]any)[safeconfig.ListFilesKey]; !ok {
		t.Fatalf("flat service::pipelines list not recorded: %v", raw)
	}
}
