// SPDX-License-Identifier: Apache-2.0

package safeconfigconverter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/featuregate"

	"github.com/otelcol-relay/otelcol-relay/components/internal/safeconfig"
	"github.com/otelcol-relay/otelcol-relay/components/safeconfigprovider"
)

// resolve runs the collector's real resolver over files, with the safe file
// provider, the env provider and this converter.
func resolve(t *testing.T, files ...string) (*confmap.Conf, error) {
	t.Helper()
	return resolveWith(t, []confmap.ProviderFactory{safeconfigprovider.NewFactory(), envprovider.NewFactory()},
		[]confmap.ConverterFactory{NewFactory()}, files...)
}

func resolveWith(t *testing.T, providers []confmap.ProviderFactory, converters []confmap.ConverterFactory, files ...string) (*confmap.Conf, error) {
	t.Helper()
	dir := t.TempDir()
	var uris []string
	for i, content := range files {
		p := filepath.Join(dir, string(rune('a'+i))+".yaml")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		uris = append(uris, "file:"+p)
	}
	r, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:               uris,
		ProviderFactories:  providers,
		ConverterFactories: converters,
		DefaultScheme:      "env",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	return r.Resolve(context.Background())
}

func withMergeAppend(t *testing.T) {
	t.Helper()
	if err := featuregate.GlobalRegistry().Set(mergeAppendGate, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = featuregate.GlobalRegistry().Set(mergeAppendGate, false) })
}

// base is a valid single-backend gateway in miniature.
const base = `
extensions:
  certwatch/default:
    ca_file: /certs/default/ca.crt
    cert_file: /certs/default/tls.crt
    key_file: /certs/default/tls.key
exporters:
  otlp_http/default:
    endpoint: https://default.example:4318
    headers:
      Authorization: ${env:OTEL_EXPORTER_DEFAULT_AUTHORIZATION}
    middlewares: [{id: certwatch/default}]
service:
  extensions: [certwatch/default]
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [otlp_http/default]
`

// fragment adds backend b the way config/backends/*.yaml does.
func fragment(envName string) string {
	return `
extensions:
  certwatch/b:
    ca_file: /certs/b/ca.crt
exporters:
  otlp_grpc/b:
    endpoint: b.example:4317
    headers:
      X-API-Key: ${env:` + envName + `}
    middlewares: [{id: certwatch/b}]
service:
  extensions: [certwatch/b]
  pipelines:
    logs:
      exporters: [otlp_grpc/b]
`
}

func TestValidConfigsPass(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_DEFAULT_AUTHORIZATION", "Bearer x")
	t.Setenv("OTEL_EXPORTER_B_X_API_KEY", "y")
	conf, err := resolve(t, base)
	if err != nil {
		t.Fatal(err)
	}
	if conf.IsSet(safeconfig.HeaderEnvKey) {
		t.Fatalf("%s left in the config", safeconfig.HeaderEnvKey)
	}

	withMergeAppend(t)
	conf, err = resolve(t, base, fragment("OTEL_EXPORTER_B_X_API_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	got := conf.Get("service::pipelines::logs::exporters")
	if want := []any{"otlp_http/default", "otlp_grpc/b"}; !equal(got, want) {
		t.Fatalf("merged exporters %v, want %v", got, want)
	}
}

// A server's certwatch (the receivers') is used by no exporter, and that is no
// misspelt middleware.
func TestServerCertwatchNeedsNoExporter(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_DEFAULT_AUTHORIZATION", "Bearer x")
	cfg := strings.Replace(base, "  certwatch/default:\n", "  certwatch/receivers:\n    server: true\n    cert_file: /tls/tls.crt\n    key_file: /tls/tls.key\n  certwatch/default:\n", 1)
	if cfg == base {
		t.Fatal("base has no certwatch/default to add certwatch/receivers beside")
	}
	if _, err := resolve(t, cfg); err != nil {
		t.Fatal(err)
	}
}

func TestRules(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_DEFAULT_AUTHORIZATION", "Bearer x")
	t.Setenv("ENDPOINT_PASSWORD", "pw")
	for _, tc := range []struct {
		name     string
		old, new string // replaced in base
		want     string
	}{
		{"ca on http endpoint", "https://default.example:4318\n", "http://default.example:4318\n    tls:\n      ca_file: /certs/ca.crt\n",
			`exporters::otlp_http/default: tls::ca_file is set but the connection is plaintext (endpoint "http://default.example:4318"), so it would be silently ignored`},
		{"client cert on http endpoint", "https://default.example:4318\n", "http://default.example:4318\n    tls:\n      cert_file: /c.crt\n      key_file: /c.key\n",
			`exporters::otlp_http/default: tls::cert_file is set but the connection is plaintext`},
		{"certwatch on http endpoint", "https://default.example:4318", "http://default.example:4318",
			`exporters::otlp_http/default: middlewares[0]::id "certwatch/default" supplies TLS certificates but the connection is plaintext`},
		{"plaintext without opt-in", "https://default.example:4318", "http://default.example:4318",
			`exporters::otlp_http/default: plaintext connection (endpoint "http://default.example:4318"): TLS is required; a plaintext hop must be an explicit choice, made by naming the exporter otlp_http/plaintext-<name>`},
		{"signal endpoint plaintext", "https://default.example:4318\n", "https://default.example:4318\n    logs_endpoint: http://other:4318/v1/logs\n",
			`exporters::otlp_http/default: plaintext connection (logs_endpoint "http://other:4318/v1/logs")`},
		{"no scheme on http", "https://default.example:4318", "default.example:4318",
			`exporters::otlp_http/default: endpoint "default.example:4318" must start with https://`},
		// A literal password is the provider's to refuse; one from the environment
		// reaches the converter, which must not echo it.
		{"credentials not echoed", "https://default.example:4318", "http://user:${env:ENDPOINT_PASSWORD}@default.example:4318",
			`endpoint "http://REDACTED@default.example:4318"`},
		{"missing certwatch", "middlewares: [{id: certwatch/default}]", "middlewares: [{id: certwatch/defualt}]", //nolint:misspell // the misspelt instance id is what this case tests
			`exporters::otlp_http/default: middlewares[0]::id "certwatch/defualt" names a certwatch instance that is not configured under extensions`}, //nolint:misspell // the misspelt instance id is what this case tests
		{"unused certwatch", "middlewares: [{id: certwatch/default}]", "middlewares: []",
			`extensions::certwatch/default: no exporter uses it`},
		{"server certwatch as a middleware", "    key_file: /certs/default/tls.key\n", "    key_file: /certs/default/tls.key\n    server: true\n",
			`exporters::otlp_http/default: middlewares[0]::id "certwatch/default" has server: true: it watches a server's certificates (the receivers') and would offer their keypair to the backend`},
		{"certwatch not started", "extensions: [certwatch/default]", "extensions: []",
			`exporters::otlp_http/default: middlewares[0]::id "certwatch/default" is configured but not listed in service::extensions`},
		{"certwatch not last", "middlewares: [{id: certwatch/default}]", "middlewares: [{id: certwatch/default}, {id: other}]",
			`exporters::otlp_http/default: middlewares[0]::id "certwatch/default" must be the last middleware`},
		{"tls pins certwatch files", "middlewares: [{id: certwatch/default}]", "middlewares: [{id: certwatch/default}]\n    tls:\n      cert_file: /certs/default/tls.crt",
			`exporters::otlp_http/default: tls::cert_file "/certs/default/tls.crt" is the file certwatch/default rotates`},
		{"unused backend", "exporters: [otlp_http/default]", "exporters: [debug]",
			`exporters::otlp_http/default: no pipeline in service::pipelines sends to it`},
		// Unverified TLS needs the visible opt-in.
		{"skip verify without opt-in", "middlewares: [{id: certwatch/default}]", "middlewares: []\n    tls:\n      ca_file: /certs/ca.crt\n      insecure_skip_verify: true",
			`exporters::otlp_http/default: tls::insecure_skip_verify is true, so the backend's certificate is not verified`},
		// certwatch builds the whole TLS configuration: any exporter tls:: field is
		// silently ignored.
		{"certwatch ignores min_version", "middlewares: [{id: certwatch/default}]", "middlewares: [{id: certwatch/default}]\n    tls:\n      min_version: \"1.3\"",
			`exporters::otlp_http/default: tls::min_version is set, but certwatch/default builds this exporter's TLS configuration itself and ignores it: remove tls::min_version (set min_version on certwatch/default instead)`},
		{"certwatch ignores another ca_file", "middlewares: [{id: certwatch/default}]", "middlewares: [{id: certwatch/default}]\n    tls:\n      ca_file: /certs/other/ca.crt",
			`exporters::otlp_http/default: tls::ca_file is set, but certwatch/default builds this exporter's TLS configuration itself and ignores it`},
		{"certwatch ignores insecure_skip_verify", "middlewares: [{id: certwatch/default}]", "middlewares: [{id: certwatch/default}]\n    tls:\n      insecure_skip_verify: true",
			`exporters::otlp_http/default: tls::insecure_skip_verify is set, but certwatch/default builds this exporter's TLS configuration itself and ignores it: remove tls::insecure_skip_verify`},
		{"certwatch ignores cipher_suites", "middlewares: [{id: certwatch/default}]", "middlewares: [{id: certwatch/default}]\n    tls:\n      cipher_suites: [TLS_AES_128_GCM_SHA256]",
			`exporters::otlp_http/default: tls::cipher_suites is set, but certwatch/default builds this exporter's TLS configuration itself and ignores it`},
	} {
		// otlp_http_wire takes otlp_http's configuration, so every rule holds for it too.
		for _, typ := range []string{"otlp_http", "otlp_http_wire"} {
			r := strings.NewReplacer("otlp_http/", typ+"/")
			base, old, repl, want := r.Replace(base), r.Replace(tc.old), r.Replace(tc.new), r.Replace(tc.want)
			t.Run(typ+"/"+tc.name, func(t *testing.T) {
				if !strings.Contains(base, old) {
					t.Fatalf("base has no %q", old)
				}
				_, err := resolve(t, strings.Replace(base, old, repl, 1))
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("got %v\nwant an error containing %q", err, want)
				}
				if strings.Contains(err.Error(), "pw@") {
					t.Fatalf("error echoes endpoint credentials: %v", err)
				}
			})
		}
	}
}

func TestPlaintextOptIn(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_DEFAULT_AUTHORIZATION", "Bearer x")
	plain := `
exporters:
  otlp_grpc/plaintext-mesh:
    endpoint: otel-sidecar.mesh.svc:4317
    tls:
      insecure: true
service:
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [otlp_grpc/plaintext-mesh]
`
	if _, err := resolve(t, plain); err != nil {
		t.Fatalf("named plaintext exporter rejected: %v", err)
	}
	_, err := resolve(t, strings.ReplaceAll(plain, "plaintext-mesh", "mesh"))
	if want := "exporters::otlp_grpc/mesh: plaintext connection (tls::insecure true)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
	tlsNamedPlain := strings.Replace(plain, "    tls:\n      insecure: true\n", "", 1)
	_, err = resolve(t, tlsNamedPlain)
	if want := `exporters::otlp_grpc/plaintext-mesh: the name says "plaintext" but the connection uses TLS`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

func TestEnvCollisionAcrossFiles(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_DEFAULT_AUTHORIZATION", "Bearer x")
	withMergeAppend(t)
	// The fragment was copied from the default backend and still reads its Secret.
	_, err := resolve(t, base, fragment("OTEL_EXPORTER_DEFAULT_AUTHORIZATION"))
	want := "environment variable OTEL_EXPORTER_DEFAULT_AUTHORIZATION is read by more than one backend (exporters::otlp_grpc/b: headers::X-API-Key; exporters::otlp_http/default: headers::Authorization)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %q", err, want)
	}
	if strings.Contains(err.Error(), "Bearer x") {
		t.Fatalf("error leaks the value: %v", err)
	}
}

func TestOneBackendTwoProtocolsMayShare(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_DEFAULT_AUTHORIZATION", "Bearer x")
	withMergeAppend(t)
	second := `
exporters:
  otlp_grpc/default:
    endpoint: default.example:4317
    headers:
      Authorization: ${env:OTEL_EXPORTER_DEFAULT_AUTHORIZATION}
    middlewares: [{id: certwatch/default}]
service:
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [otlp_grpc/default]
`
	if _, err := resolve(t, base, second); err != nil {
		t.Fatal(err)
	}
}

// Without the merge-append gate a fragment's exporter list replaces the base's, and
// the default backend would silently receive nothing.
func TestFragmentWithoutMergeAppendIsAnError(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_DEFAULT_AUTHORIZATION", "Bearer x")
	t.Setenv("OTEL_EXPORTER_B_X_API_KEY", "y")
	_, err := resolve(t, base, fragment("OTEL_EXPORTER_B_X_API_KEY"))
	for _, want := range []string{
		"a.yaml, ", "b.yaml each set lists under service::",
		"run with --feature-gates=confmap.enableMergeAppendOption",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v\nwant %q", err, want)
		}
	}
}

func TestCheckListMerge(t *testing.T) {
	two := map[string]any{"/c/gateway.yaml": true, "/c/backends/b.yaml": true}
	one := map[string]any{"/c/gateway.yaml": true}
	if err := checkListMerge(two, false); err == nil {
		t.Fatal("two list-setting files without the gate: want an error")
	}
	if err := checkListMerge(two, true); err != nil {
		t.Fatalf("with the gate: %v", err)
	}
	// A fragment that sets no service lists (receiver TLS, say) is a plain merge.
	if err := checkListMerge(one, false); err != nil {
		t.Fatalf("one list-setting file: %v", err)
	}
	if err := checkListMerge(nil, false); err != nil {
		t.Fatalf("no record: %v", err)
	}
}

func equal(got any, want []any) bool {
	l, ok := got.([]any)
	if !ok || len(l) != len(want) {
		return false
	}
	for i := range l {
		if l[i] != want[i] {
			return false
		}
	}
	return true
}

// otlpGRPC is one gRPC backend; %s is its name, %s its endpoint and %s its tls block.
const otlpGRPC = `
exporters:
  otlp_grpc/%s:
    endpoint: %s
%s
service:
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [otlp_grpc/%s]
`

// configgrpc v1.71.0 (getGrpcDialOptions) uses TLS unless tls::insecure is true
// with no CA; an https:// endpoint turns it back on. The endpoint's scheme is
// otherwise a resolver target (dns:///, passthrough:///) or stripped (http://).
// confighttp decides from the URL scheme alone. The rules follow what the
// exporters do.
func TestTransportFollowsTheExporters(t *testing.T) {
	grpc := func(name, endpoint, tls string) string {
		return fmt.Sprintf(otlpGRPC, name, endpoint, tls, name)
	}
	const insecure = "    tls:\n      insecure: true"
	for _, tc := range []struct {
		name, config, want string // want "" means accepted
	}{
		{"grpc dns resolver keeps TLS", grpc("b", "dns:///b.example:4317", ""), ""},
		{"grpc passthrough keeps TLS", grpc("b", "passthrough:///b.example:4317", ""), ""},
		{"grpc http:// keeps TLS", grpc("b", "http://b.example:4317", ""), ""},
		{"grpc http:// named plaintext uses TLS", grpc("plaintext-b", "http://b.example:4317", ""),
			`exporters::otlp_grpc/plaintext-b: the name says "plaintext" but the connection uses TLS (configgrpc decides from tls::insecure, not from an http:// endpoint)`},
		{"grpc dns resolver insecure named plaintext", grpc("plaintext-b", "dns:///b.example:4317", insecure), ""},
		{"grpc dns resolver insecure", grpc("b", "dns:///b.example:4317", insecure),
			"exporters::otlp_grpc/b: plaintext connection (tls::insecure true): TLS is required"},
		{"grpc https:// ignores insecure", grpc("b", "https://b.example:4317", insecure),
			"exporters::otlp_grpc/b: tls::insecure is true but the connection uses TLS anyway (configgrpc uses TLS for an https:// endpoint)"},
		{"grpc ca_file overrides insecure", grpc("b", "b.example:4317", insecure+"\n      ca_file: /certs/ca.crt"),
			"exporters::otlp_grpc/b: tls::insecure is true but the connection uses TLS anyway (configgrpc uses TLS when tls::ca_file or ca_pem is set)"},
		{"http https:// ignores insecure", strings.ReplaceAll(grpc("b", "https://b.example:4318", insecure), "otlp_grpc", "otlp_http"),
			"exporters::otlp_http/b: tls::insecure is true but the connection uses TLS anyway (otlp_http uses TLS for every https:// endpoint)"},
		{"http https:// insecure named plaintext", strings.ReplaceAll(grpc("plaintext-b", "https://b.example:4318", insecure), "otlp_grpc", "otlp_http"),
			`exporters::otlp_http/plaintext-b: the name says "plaintext" but the connection uses TLS`},
		{"http http:// named plaintext", strings.ReplaceAll(grpc("plaintext-b", "http://b.example:4318", ""), "otlp_grpc", "otlp_http"), ""},
		// insecure_skip_verify is allowed only behind the visible opt-in (item 9).
		{"grpc skip verify named plaintext", grpc("plaintext-lab", "lab.example:4317", "    tls:\n      insecure_skip_verify: true"), ""},
		{"grpc skip verify from env", grpc("b", "b.example:4317", "    tls:\n      insecure_skip_verify: ${env:SKIP_VERIFY}"),
			"exporters::otlp_grpc/b: tls::insecure_skip_verify is true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SKIP_VERIFY", "true")
			_, err := resolve(t, tc.config)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want accepted, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}
