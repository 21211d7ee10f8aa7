// SPDX-License-Identifier: Apache-2.0

package safeconfigprovider

import (
	"strings"
	"testing"
)

// The review cases of record processing and backend auth (issue 43): what may
// reach a record or a request, and from where.
func TestRecordProcessingAndAuth(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		wantErr   string // "" means accepted
	}{
		{"filter condition, literal", `processors: {filter/noise: {logs: {log_record: ['IsMatch(body, "GET /healthz")']}}}`, ""},
		{"filter condition reads env", `processors: {filter/noise: {logs: {log_record: ['body == "${env:ADMIN_PASSWORD}"']}}}`,
			"processors::filter/noise::logs::log_record[0] reads ${env:ADMIN_PASSWORD}: a filter processor's statements and patterns may not read the environment or files"},
		{"flat filter key reads env", `processors: {"filter/noise::logs::log_record": ['body == "${env:X}"']}`,
			"processors::filter/noise::logs::log_record[0] reads ${env:X}"},
		{"transform reads a file", `processors: {transform/t: {log_statements: ['set(log.attributes["k"], "${file:/var/run/secrets/token}")']}}`,
			"processors::transform/t::log_statements[0] reads ${file:/var/run/secrets/token}"},
		{"transform, default scheme", `processors: {transform: {log_statements: ['set(log.body, "${TOKEN}")']}}`,
			"processors::transform::log_statements[0] reads ${env:TOKEN}"},
		{"redaction pattern reads env", `processors: {redaction/vendor: {blocked_values: ['${env:PATTERN}']}}`,
			"processors::redaction/vendor::blocked_values[0] reads ${env:PATTERN}"},
		{"redaction hmac key from env", `processors: {redaction/vendor: {hash_function: hmac-sha256, hmac_key: "${env:REDACTION_HMAC_KEY}"}}`, ""},
		{"redaction hmac key literal", `processors: {redaction/vendor: {hash_function: hmac-sha256, hmac_key: ` + secret + `}}`,
			"processors::redaction/vendor::hmac_key is a credential written as a literal value"},
		{"resource reads a plain variable", `processors: {resource/cluster: {attributes: [{key: k8s.cluster.name, value: "${env:CLUSTER_NAME}", action: upsert}]}}`, ""},
		{"resource reads a token variable", `processors: {resource/x: {attributes: [{key: t, value: "${env:VENDOR_API_TOKEN}", action: upsert}]}}`,
			"processors::resource/x::attributes[0]::value reads ${env:VENDOR_API_TOKEN}, which looks like a credential"},
		{"attributes reads a header variable", `processors: {attributes/x: {actions: [{key: t, value: "${env:OTEL_EXPORTER_CORP_X_SCOPE_ORGID}", action: insert}]}}`,
			"reads ${env:OTEL_EXPORTER_CORP_X_SCOPE_ORGID}, which looks like a credential"},
		{"attributes reads a file", `processors: {attributes/x: {actions: [{key: t, value: "${file:/etc/hostname}", action: insert}]}}`,
			"reads ${file:/etc/hostname}, a file (Secrets are mounted as files)"},
		{"k8s_attributes may read env", `processors: {k8s_attributes: {auth_type: "${env:RELAY_K8S_AUTH_TYPE}"}}`, ""},
		{"route condition reads env", `backends: [{name: vendor, endpoint: "https://v", route: {condition: 'resource.attributes["t"] == "${env:T}"'}}]`,
			"backends[0] (vendor)::route::condition reads ${env:T}"},
		{"route condition, literal", `backends: [{name: vendor, endpoint: "https://v", route: {condition: 'resource.attributes["t"] == "gold"'}}]`, ""},
		{"bearer token literal", `extensions: {bearertokenauth/v: {token: ` + secret + `}}`,
			"extensions::bearertokenauth/v::token is a credential written as a literal value"},
		{"bearer tokens literal", `extensions: {bearertokenauth/v: {tokens: [` + secret + `]}}`,
			"extensions::bearertokenauth/v::tokens[0] is a credential written as a literal value"},
		{"bearer token from env", `extensions: {bearertokenauth/v: {token: "${env:VENDOR_TOKEN}"}}`, ""},
		{"bearer token file", `extensions: {bearertokenauth/v: {filename: /var/run/secrets/tokens/vendor}}`, ""},
		{"basic auth password literal", `extensions: {basicauth/g: {client_auth: {username: u, password: ` + secret + `}}}`,
			"extensions::basicauth/g::client_auth::password is a credential written as a literal value"},
		{"basic auth password file", `extensions: {basicauth/g: {client_auth: {username: u, password_file: /etc/otelcol-relay/backend-auth/g}}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := retrieve(t, tc.doc+"\n")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			case err != nil && strings.Contains(err.Error(), secret):
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
}
