// SPDX-License-Identifier: Apache-2.0

package safeconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The provider suggests these names and backendsconverter reads them: the
// convention is the contract, so it is pinned here once.
func TestExporterEnvName(t *testing.T) {
	for id, want := range map[string]string{
		"otlp_http/backend-b": "OTEL_EXPORTER_BACKEND_B_DD_API_KEY",
		"backend-b":           "OTEL_EXPORTER_BACKEND_B_DD_API_KEY",
		"otlp_grpc/a.b/c":     "OTEL_EXPORTER_A_B_C_DD_API_KEY",
	} {
		assert.Equal(t, want, ExporterEnvName(id, "dd-api-key"), id)
	}
}

func TestScan(t *testing.T) {
	refs, literal := Scan("Bearer ${env:TOKEN} $${env:ESCAPED} ${file:/t} ${NAME} ${env:D:-${env:E}} ${open")
	assert.Equal(t, []Ref{
		{Scheme: "env", Name: "TOKEN"},
		{Scheme: "file", Name: "/t"},
		{Scheme: "env", Name: "NAME"},
		{Scheme: "env", Name: "D", Def: "${env:E}", HasDef: true},
	}, refs)
	assert.Equal(t, "Bearer  ${env:ESCAPED}    ${open", literal)
}

func TestMaskRefsRoundTrip(t *testing.T) {
	s := "https://u:${env:PW}@h/?sig=${env:S}&$$x=1"
	masked, orig := MaskRefs(s)
	assert.NotContains(t, masked, "${")
	assert.Equal(t, []string{"${env:PW}", "${env:S}"}, orig)
	assert.Equal(t, s, Unmask(masked, orig))
}

// Unflatten reads keys as confmap does, and also inside lists.
func TestUnflatten(t *testing.T) {
	raw := map[string]any{
		"exporters": map[string]any{"otlp_grpc/a": map[string]any{
			"headers::X-Api-Key": "${env:A}",
			"tls":                map[string]any{"ca_file": "/ca"},
			"tls::key_pem":       "${env:K}",
		}},
		"exporters::otlp_grpc/b::endpoint": "https://b",
		"backends":                         []any{map[string]any{"name": "v", "exporter::headers::Authorization": "${env:C}"}},
	}
	want := map[string]any{
		"exporters": map[string]any{
			"otlp_grpc/a": map[string]any{
				"headers": map[string]any{"X-Api-Key": "${env:A}"},
				"tls":     map[string]any{"ca_file": "/ca", "key_pem": "${env:K}"},
			},
			"otlp_grpc/b": map[string]any{"endpoint": "https://b"},
		},
		"backends": []any{map[string]any{"name": "v", "exporter": map[string]any{"headers": map[string]any{"Authorization": "${env:C}"}}}},
	}
	assert.Equal(t, want, Unflatten(raw))
	assert.Contains(t, raw, "exporters::otlp_grpc/b::endpoint", "the input is left as written")
}

// A path written twice keeps one value only: it is reported. A value and a map
// under one path are not: the map wins.
func TestAmbiguous(t *testing.T) {
	assert.Empty(t, Ambiguous(map[string]any{"a": map[string]any{"b": 1}, "a::c": 2, "l": []any{map[string]any{"x": 1}}}))
	assert.Equal(t, []string{
		"backends[0]::exporter::headers::Authorization",
		"exporters::otlp_grpc/a::headers::X-Api-Key",
	}, Ambiguous(map[string]any{
		"exporters": map[string]any{"otlp_grpc/a": map[string]any{
			"headers::X-Api-Key": "a",
			"headers":            map[string]any{"X-Api-Key": "b"},
			"tls":                "",
			"tls::key_pem":       "c",
		}},
		"backends": []any{map[string]any{"exporter::headers::Authorization": "a", "exporter": map[string]any{"headers::Authorization": "b"}}},
	}))
}
