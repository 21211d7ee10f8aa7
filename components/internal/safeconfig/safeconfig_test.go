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
