// SPDX-License-Identifier: Apache-2.0

package safeconfigprovider

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-relay/otelcol-relay/components/internal/safeconfig"
)

const secret = "s3cr3t-value-never-printed"

func retrieve(t *testing.T, content string) (*confmap.Retrieved, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	p := NewFactory().Create(confmaptest.NewNopProviderSettings())
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p.Retrieve(context.Background(), "file:"+path, nil)
}

func exporterWithHeader(header, value string) string {
	return "exporters:\n  otlp_http/backend-b:\n    endpoint: https://b.example:4318\n    headers:\n      " + header + ": " + value + "\n"
}

func TestCredentialHeaders(t *testing.T) {
	for _, tc := range []struct {
		name, header, value string
		wantErr             string // "" means accepted
	}{
		{"env", "Authorization", "${env:OTEL_EXPORTER_BACKEND_B_AUTHORIZATION}", ""},
		{"default scheme env", "Authorization", "${OTEL_EXPORTER_BACKEND_B_AUTHORIZATION}", ""},
		{"bearer prefix", "Authorization", "Bearer ${env:TOKEN}", ""},
		{"file", "X-API-Key", "${file:/var/run/secrets/backend/api-key}", ""},
		{"empty default", "DD-API-KEY", "${env:DD_KEY:-}", ""},
		{"not a credential", "X-Scope-OrgID", "tenant-a", ""},
		{"empty literal", "Authorization", `""`, ""},
		{"literal", "Authorization", "Bearer " + secret,
			"exporters::otlp_http/backend-b: headers::Authorization is a credential written as a literal value (value not shown): write ${env:OTEL_EXPORTER_BACKEND_B_AUTHORIZATION} (from a Secret) or ${file:/path} instead"},
		{"literal api key", "DD-API-KEY", secret, "headers::DD-API-KEY is a credential written as a literal value"},
		{"lower case", "x-sf-token", secret, "headers::x-sf-token is a credential written as a literal value"},
		{"number", "api_key", "1234567890", "headers::api_key is a credential written as a literal value"},
		{"escaped reference is text", "Authorization", "$${env:TOKEN}", "is a credential written as a literal value"},
		{"literal default", "Authorization", "${env:TOKEN:-" + secret + "}", "has a literal default in ${env:TOKEN:-...} (value not shown)"},
		{"yaml scheme", "Authorization", "${yaml:" + secret + "}", "comes from ${yaml:...}, which embeds the value in the config"},
		{"literal around reference", "Authorization", secret + "${env:TOKEN}", "mixes literal text with a reference"},
		// Only known auth scheme words may be literal.
		{"literal word before reference", "X-API-Key", "LITERALKEY ${env:X:-}", "mixes literal text with a reference"},
		{"secret word before reference", "Authorization", secret + " ${env:TOKEN}", "mixes literal text with a reference"},
		{"scheme word after reference", "Authorization", `"${env:TOKEN}Bearer "`, "mixes literal text with a reference"},
		{"api-token scheme", "Authorization", "Api-Token ${env:DT_TOKEN}", ""},
		{"apikey scheme", "Authorization", "ApiKey ${env:ES_KEY}", ""},
		{"lower-case basic", "Authorization", "basic ${env:BASIC}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := retrieve(t, exporterWithHeader(tc.header, tc.value))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("want accepted, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error containing %q, got none", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %q does not contain %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "1234567890") {
				t.Fatalf("error leaks the credential: %q", err)
			}
		})
	}
}

func TestListFormHeaders(t *testing.T) {
	_, err := retrieve(t, `exporters:
  otlp_grpc/a:
    endpoint: a.example:4317
    headers:
      - name: Authorization
        value: `+secret+`
`)
	if err == nil || !strings.Contains(err.Error(), "exporters::otlp_grpc/a: headers::Authorization is a credential written as a literal value") {
		t.Fatalf("got %v", err)
	}
}

func TestSecretKeysAnywhere(t *testing.T) {
	_, err := retrieve(t, `receivers:
  prometheus/federation:
    config:
      scrape_configs:
        - job_name: federate
          basic_auth:
            username: relay
            password: `+secret+`
          authorization:
            credentials_file: /var/run/secrets/token
`)
	want := "receivers::prometheus/federation::config::scrape_configs[0]::basic_auth::password is a credential written as a literal value"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("error leaks the credential: %q", err)
	}
	if _, err := retrieve(t, "extensions:\n  bearertokenauth:\n    token: ${env:TOKEN}\n"); err != nil {
		t.Fatalf("env-sourced token rejected: %v", err)
	}
}

// A ${file:...} secret goes through the same provider; it must come back untouched.
func TestScalarFileUntouched(t *testing.T) {
	ret, err := retrieve(t, "Bearer "+secret+"\n")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ret.AsString()
	if err != nil || s != "Bearer "+secret+"\n" {
		t.Fatalf("got %q, %v", s, err)
	}
}

func TestRecordsHeaderEnvs(t *testing.T) {
	ret, err := retrieve(t, `exporters:
  otlp_http/a:
    headers:
      Authorization: Bearer ${env:A_TOKEN}
      X-Tenant: ${env:TENANT}-${env:REGION:-eu}
      X-Static: fixed
`)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := ret.AsRaw()
	if err != nil {
		t.Fatal(err)
	}
	got := raw.(map[string]any)[safeconfig.HeaderEnvKey].(map[string]any)["otlp_http/a"].(map[string]any)
	if got["Authorization"] != "A_TOKEN" || got["X-Tenant"] != "TENANT REGION" || got["X-Static"] != nil {
		t.Fatalf("recorded %v", got)
	}
}

func TestMissingFileKeepsUpstreamError(t *testing.T) {
	p := NewFactory().Create(confmaptest.NewNopProviderSettings())
	_, err := p.Retrieve(context.Background(), "file:/nonexistent/relay.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "unable to read the file") {
		t.Fatalf("got %v", err)
	}
	if p.Scheme() != "file" {
		t.Fatalf("scheme %q", p.Scheme())
	}
}

// expectRefused retrieves content and wants one error per entry of want, none of
// which may show the secret.
func expectRefused(t *testing.T, content string, want ...string) {
	t.Helper()
	_, err := retrieve(t, content)
	if err == nil {
		t.Fatalf("accepted; want errors %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not contain %q:\n%v", w, err)
		}
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("error leaks the credential: %q", err)
	}
}

func expectAccepted(t *testing.T, content string) {
	t.Helper()
	if _, err := retrieve(t, content); err != nil {
		t.Fatalf("want accepted, got %v", err)
	}
}

// Headers are checked in every component, not only exporters.
func TestCredentialHeadersInEveryComponent(t *testing.T) {
	expectRefused(t, `processors:
  federation_types:
    headers:
      Authorization: "Bearer `+secret+`"
extensions:
  headers_setter:
    headers:
      - key: X-Scope-OrgID
        from_context: tenant
      - key: X-API-Key
        value: `+secret+`
service:
  telemetry:
    metrics:
      readers:
        - periodic:
            exporter:
              otlp:
                headers:
                  - name: api-key
                    value: `+secret+`
`,
		"processors::federation_types: headers::Authorization is a credential written as a literal value (value not shown)",
		"extensions::headers_setter: headers::X-API-Key is a credential written as a literal value",
		"service::telemetry::metrics::readers[0]::periodic::exporter::otlp: headers::api-key is a credential written as a literal value",
	)
	expectAccepted(t, `processors:
  federation_types:
    headers:
      Authorization: Bearer ${env:FEDERATION_TOKEN}
      X-Scope-OrgID: tenant-a
extensions:
  headers_setter:
    headers:
      - key: X-API-Key
        from_context: api_key
`)
}

// A password in a URL's userinfo becomes Basic auth; credential query parameters
// are sent as they are.
func TestCredentialsInURLs(t *testing.T) {
	expectRefused(t, `exporters:
  otlp_http/b:
    endpoint: https://relay:`+secret+`@b.example:4318
    logs_endpoint: https://b.example:4318/v1/logs?tenant=a&api_key=`+secret+`
receivers:
  prometheus/federation:
    config:
      scrape_configs:
        - job_name: federate
          proxy_url: http://proxy:`+secret+`@proxy.example:3128
          static_configs:
            - targets: ["${env:TARGET:-https://u:`+secret+`@p.example:9090}"]
`,
		"exporters::otlp_http/b::endpoint has a password in its userinfo, which Go sends as Basic auth: the password is a credential written as a literal value (value not shown)",
		"exporters::otlp_http/b::logs_endpoint has a credential in its query parameter api_key: the value is a credential written as a literal value (value not shown)",
		"receivers::prometheus/federation::config::scrape_configs[0]::proxy_url has a password in its userinfo",
		"receivers::prometheus/federation::config::scrape_configs[0]::static_configs[0]::targets[0] has a password in its userinfo",
	)
	expectAccepted(t, `exporters:
  otlp_http/b:
    endpoint: https://relay:${env:B_PASSWORD}@b.example:4318
    logs_endpoint: https://b.example:4318/v1/logs?tenant=a&api_key=${env:B_API_KEY}
    traces_endpoint: https://relay@b.example:4318/v1/traces
processors:
  federation_types:
    endpoint: ${env:RELAY_FEDERATION_SCHEME:-https}://${env:RELAY_FEDERATION_TARGET:-prometheus.example:9090}
`)
}

// Every element of a list is checked: scrape params and Prometheus http_headers.
func TestCredentialLists(t *testing.T) {
	// One scrape config; apiKey and headers are the lists under test.
	scrapeConfig := func(apiKey, headers string) string {
		return `receivers:
  prometheus/federation:
    config:
      scrape_configs:
        - job_name: federate
          params:
            "match[]": ['{job="a"}']
            api_key: ` + apiKey + `
          http_headers:
` + headers
	}
	expectRefused(t, scrapeConfig(`["${env:KEY}", `+secret+`]`, `            X-Api-Key:
              values: [`+secret+`]
            X-Tenant:
              values: [tenant-a]
              secrets: [`+secret+`]
`),
		"receivers::prometheus/federation::config::scrape_configs[0]::params::api_key[1] is a credential written as a literal value",
		"receivers::prometheus/federation::config::scrape_configs[0]::http_headers::X-Api-Key::values[0] is a credential written as a literal value",
		"receivers::prometheus/federation::config::scrape_configs[0]::http_headers::X-Tenant::secrets[0] is a credential written as a literal value",
	)
	expectAccepted(t, scrapeConfig(`["${env:KEY}"]`, `            X-Api-Key:
              files: [/var/run/secrets/key]
              secrets: ["${env:KEY}"]
            X-Tenant:
              values: [tenant-a]
`))
}
