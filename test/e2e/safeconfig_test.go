// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/testvolume"
)

func TestGatewayConfigSafetyRules(t *testing.T) {
	def, second := newTLSBackend(t, "default"), newTLSBackend(t, "second")
	g := newGatewayEnv(t, def, second)
	const literal = "literal-key-0c9d2e"
	// The issue's literal, and the token of backend corp that backend vendor must
	// not carry.
	const issueLiteral, corpToken = "literal-SECRET", "Bearer corp-token-2d9f61"

	// The shipped configs are valid: the rules below fail for their own reason.
	// So are gRPC endpoints that keep TLS whatever their scheme says: configgrpc
	// decides TLS from tls::insecure, and dns:/// is a resolver target.
	for _, v := range []struct {
		args []string
		env  []string
	}{
		{args: []string{"--config", gatewayConfig("gateway.yaml")}},
		{args: twoBackendArgs()},
		{args: twoBackendArgs("--config", gatewayConfig("receiver-tls.yaml"))},
		{args: twoBackendArgs(), env: []string{"OTEL_EXPORTER_SECOND_ENDPOINT=dns:///" + second.sink.GRPCAddr}},
		{args: twoBackendArgs(), env: []string{"OTEL_EXPORTER_SECOND_ENDPOINT=http://" + second.sink.GRPCAddr}},
	} {
		env := append(append([]string(nil), g.env...), v.env...)
		if out, code := e2e.Run(t, time.Minute, env, append([]string{"validate"}, v.args...)...); code != 0 {
			t.Fatalf("validate %v %v: exit %d\n%s", v.env, v.args, code, out)
		}
	}

	gatewayWith := func(name, fragment string) func(t *testing.T) []string {
		return func(t *testing.T) []string {
			return []string{"--config", gatewayConfig("gateway.yaml"), "--config", writeFile(t, name, fragment)}
		}
	}
	// secondWith merges backends/second.yaml, edited (old, new pairs), into gateway.yaml.
	// withBackend merges a fragment that adds backends to gateway.yaml, with the
	// gate that makes its pipeline lists add to the gateway's.
	withBackend := func(fragment string) func(t *testing.T) []string {
		return func(t *testing.T) []string {
			return []string{"--config", gatewayConfig("gateway.yaml"), "--config", writeFile(t, "backend.yaml", fragment),
				"--feature-gates=confmap.enableMergeAppendOption"}
		}
	}
	corpEnv := []string{"OTEL_EXPORTER_CORP_AUTHORIZATION=" + corpToken}
	secondWith := func(edits ...string) func(t *testing.T) []string {
		return func(t *testing.T) []string {
			return []string{"--config", gatewayConfig("gateway.yaml"), "--config", secondFragment(t, edits...),
				"--feature-gates=confmap.enableMergeAppendOption"}
		}
	}
	for _, tc := range []struct {
		name  string
		args  func(t *testing.T) []string
		env   []string
		setup func(t *testing.T) []string // more env, made inside the subtest
		want  string
		more  []string // further errors validate must report
	}{
		{
			name: "literal credential header",
			args: secondWith("X-API-Key: ${env:OTEL_EXPORTER_SECOND_X_API_KEY}", "X-API-Key: "+literal),
			want: "exporters::otlp_grpc/second: headers::X-API-Key is a credential written as a literal value (value not shown): write ${env:OTEL_EXPORTER_SECOND_X_API_KEY}",
		},
		{
			name: "client certificate and CA on an http:// endpoint",
			args: func(_ *testing.T) []string { return []string{"--config", gatewayConfig("gateway.yaml")} },
			env:  []string{"OTEL_EXPORTER_DEFAULT_ENDPOINT=http://" + def.sink.HTTPAddr},
			want: `exporters::otlp_http_wire/default: middlewares[0]::id "certwatch/default" supplies TLS certificates but the connection is plaintext`,
		},
		{
			name: "tls ca_file on an http:// endpoint",
			args: func(t *testing.T) []string {
				return append(twoBackendArgs()[:2], "--config", writeFile(t, "tls.yaml", `
exporters:
  otlp_http_wire/default:
    endpoint: http://127.0.0.1:4318
    middlewares: []
    tls:
      ca_file: /certs/default/ca.crt
`))
			},
			want: `exporters::otlp_http_wire/default: tls::ca_file is set but the connection is plaintext (endpoint "http://127.0.0.1:4318"), so it would be silently ignored`,
		},
		{
			name: "plaintext endpoint without the named opt-in",
			args: func(_ *testing.T) []string { return []string{"--config", gatewayConfig("gateway.yaml")} },
			env:  []string{"OTEL_EXPORTER_DEFAULT_ENDPOINT=http://" + def.sink.HTTPAddr},
			want: "exporters::otlp_http_wire/default: plaintext connection (endpoint \"http://" + def.sink.HTTPAddr + "\"): TLS is required; a plaintext hop must be an explicit choice, made by naming the exporter otlp_http_wire/plaintext-<name>",
		},
		{
			name: "two backends share a header variable",
			args: secondWith("${env:OTEL_EXPORTER_SECOND_X_API_KEY}", "${env:OTEL_EXPORTER_DEFAULT_AUTHORIZATION}"),
			want: "environment variable OTEL_EXPORTER_DEFAULT_AUTHORIZATION is read by more than one backend (exporters::otlp_grpc/second: headers::X-API-Key; exporters::otlp_http_wire/default: headers::Authorization)",
		},
		{
			name: "exporter names a missing certwatch",
			args: secondWith("middlewares: [{id: certwatch/second}]", "middlewares: [{id: certwatch/secnod}]"),
			want: `exporters::otlp_grpc/second: middlewares[0]::id "certwatch/secnod" names a certwatch instance that is not configured under extensions`,
		},
		{
			name: "certwatch instance no exporter uses",
			args: secondWith("middlewares: [{id: certwatch/second}]", "middlewares: [{id: certwatch/default}]"),
			want: "extensions::certwatch/second: no exporter uses it",
		},
		{
			name: "fragment merged without the merge-append gate",
			args: func(_ *testing.T) []string { return twoBackendArgs()[:4] },
			want: "each set lists under service:: (extensions, or pipeline receivers, processors or exporters), and without the confmap.enableMergeAppendOption feature gate the last file's lists replace the others' instead of adding to them: run with --feature-gates=confmap.enableMergeAppendOption",
		},
		{
			// The collector's own telemetry exporter is a component with headers
			// outside exporters::.
			name: "literal credential header outside exporters",
			args: gatewayWith("telemetry.yaml", `
service:
  telemetry:
    metrics:
      readers:
        - periodic:
            exporter:
              otlp:
                protocol: http/protobuf
                endpoint: https://127.0.0.1:4318/v1/metrics
                headers:
                  - name: Authorization
                    value: "Bearer `+literal+`"
`),
			want: "service::telemetry::metrics::readers[0]::periodic::exporter::otlp: headers::Authorization is a credential written as a literal value (value not shown)",
		},
		{
			name: "password in an endpoint's userinfo",
			args: gatewayWith("userinfo.yaml", "exporters:\n  otlp_http_wire/default:\n    endpoint: https://relay:"+literal+"@127.0.0.1:4318\n"),
			want: "exporters::otlp_http_wire/default::endpoint has a password in its userinfo, which Go sends as Basic auth: the password is a credential written as a literal value (value not shown)",
		},
		{
			name: "credential query parameter in an endpoint",
			args: gatewayWith("query.yaml", "exporters:\n  otlp_http_wire/default:\n    logs_endpoint: https://127.0.0.1:4318/v1/logs?api_key="+literal+"\n"),
			want: "exporters::otlp_http_wire/default::logs_endpoint has a credential in its query parameter api_key: the value is a credential written as a literal value (value not shown)",
		},
		{
			name: "literal credentials in scrape params and http_headers lists",
			args: gatewayWith("scrape.yaml", `
receivers:
  prometheus/federation:
    config:
      scrape_configs:
        - job_name: federate
          params:
            api_key: [`+literal+`]
          http_headers:
            X-Api-Key:
              values: [`+literal+`]
`),
			want: "receivers::prometheus/federation::config::scrape_configs[0]::params::api_key[0] is a credential written as a literal value (value not shown)",
			more: []string{"receivers::prometheus/federation::config::scrape_configs[0]::http_headers::X-Api-Key::values[0] is a credential written as a literal value"},
		},
		{
			name: "literal word before a reference",
			args: secondWith("X-API-Key: ${env:OTEL_EXPORTER_SECOND_X_API_KEY}", `X-API-Key: "`+literal+` ${env:OTEL_EXPORTER_SECOND_X_API_KEY}"`),
			want: "exporters::otlp_grpc/second: headers::X-API-Key mixes literal text with a reference (value not shown): only an auth scheme word such as \"Bearer \" may be literal",
		},
		{
			name: "insecure_skip_verify without the named opt-in",
			args: gatewayWith("skipverify.yaml", "exporters:\n  otlp_http_wire/default:\n    middlewares: []\n    tls:\n      ca_file: "+def.caFile+"\n      insecure_skip_verify: true\n"),
			want: "exporters::otlp_http_wire/default: tls::insecure_skip_verify is true, so the backend's certificate is not verified",
		},
		{
			name: "tls field that certwatch ignores",
			args: gatewayWith("minversion.yaml", "exporters:\n  otlp_http_wire/default:\n    tls:\n      min_version: \"1.3\"\n"),
			want: "exporters::otlp_http_wire/default: tls::min_version is set, but certwatch/default builds this exporter's TLS configuration itself and ignores it: remove tls::min_version (set min_version on certwatch/default instead)",
		},
		// confmap unflattens "::" keys before the collector runs: the flat
		// spelling is the same field and meets the same rule.
		{
			// The default backend as shipped, header-only (no file of its own): its
			// one credential still may not be a literal.
			name: "literal credential header on the header-only default backend",
			args: gatewayWith("literal.yaml", "exporters:\n  otlp_http_wire/default:\n    headers:\n      Authorization: "+issueLiteral+"\n"),
			env:  []string{"OTEL_EXPORTER_DEFAULT_CA_FILE=", "OTEL_EXPORTER_DEFAULT_CERT_FILE=", "OTEL_EXPORTER_DEFAULT_KEY_FILE="},
			want: "exporters::otlp_http_wire/default: headers::Authorization is a credential written as a literal value (value not shown)",
		},
		{
			name: "literal credential header written as a flat key",
			args: withBackend(grpcBackends("otlp_grpc/corp", `"headers::X-Api-Key": `+issueLiteral)),
			want: "exporters::otlp_grpc/corp: headers::X-Api-Key is a credential written as a literal value (value not shown): write ${env:OTEL_EXPORTER_CORP_X_API_KEY}",
		},
		{
			name: "literal tls key_pem written as a flat key",
			args: withBackend(grpcBackends("otlp_grpc/corp", "\"tls::cert_pem\": ${env:OTEL_EXPORTER_CORP_CERT_PEM}\n    \"tls::key_pem\": "+issueLiteral)),
			env:  []string{"OTEL_EXPORTER_CORP_CERT_PEM=not-checked-by-validate"},
			want: "exporters::otlp_grpc/corp::tls::key_pem is a credential written as a literal value (value not shown)",
		},
		{
			name: "literal credential header under Headers",
			args: withBackend(grpcBackends("otlp/corp", "Headers: {X-Api-Key: "+issueLiteral+"}")),
			want: "exporters::otlp/corp: Headers::X-Api-Key is a credential written as a literal value (value not shown)",
		},
		{
			name: "another backend's header variable as a flat key",
			args: withBackend(grpcBackends("otlp_grpc/corp", `headers: {Authorization: "${env:OTEL_EXPORTER_CORP_AUTHORIZATION}"}`,
				"otlp_grpc/vendor", `"headers::Authorization": ${env:OTEL_EXPORTER_CORP_AUTHORIZATION}`)),
			env:  corpEnv,
			want: "environment variable OTEL_EXPORTER_CORP_AUTHORIZATION is read by more than one backend (exporters::otlp_grpc/corp: headers::Authorization; exporters::otlp_grpc/vendor: headers::Authorization)",
		},
		{
			name: "another backend's header variable, deprecated alias and lower-case header",
			args: withBackend(grpcBackends("otlp_grpc/corp", `headers: {Authorization: "${env:OTEL_EXPORTER_CORP_AUTHORIZATION}"}`,
				"otlp/vendor", `"headers::authorization": ${env:OTEL_EXPORTER_CORP_AUTHORIZATION}`)),
			env:  corpEnv,
			want: "(exporters::otlp/vendor: headers::authorization; exporters::otlp_grpc/corp: headers::Authorization)",
		},
		{
			name: "backends entry carrying another backend's header",
			args: func(t *testing.T) []string {
				return []string{"--config", gatewayConfig("gateway.yaml"), "--config", writeFile(t, "backends.yaml", `
backends:
  - name: corp
    endpoint: https://collector.corp.example:4317
    headers: [Authorization]
  - name: vendor
    endpoint: https://collector.vendor.example:4317
    exporter:
      "headers::Authorization": ${env:OTEL_EXPORTER_CORP_AUTHORIZATION}
`)}
			},
			env:  corpEnv,
			want: "backends[1] (vendor): exporter: headers cannot be set here; it belongs to the backend entry",
		},
		{
			// 2 MiB per signal x 3 signals, twice over, is 12 MiB, plus three
			// queue_storage segments per signal (128 KiB on this volume): 13 MiB,
			// inside the volume's ~13.7 MiB of blocks, outside the ~9.4 MiB left
			// after root's 25% reserve.
			name: "queue bounds that fit only with root's reserved blocks",
			args: func(_ *testing.T) []string { return []string{"--config", gatewayConfig("gateway.yaml")} },
			setup: func(t *testing.T) []string {
				return []string{"RELAY_QUEUE_DIR=" + testvolume.Ext4(t, 16, 25) + "/queue", "OTEL_EXPORTER_DEFAULT_QUEUE_BYTES=2097152"}
			},
			want: "/queue/qs need up to 13 MiB of disk (twice their bounds: ",
			more: []string{"holds 9 MiB"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args(t)
			env := append(append([]string(nil), g.env...), tc.env...)
			if tc.setup != nil {
				env = append(env, tc.setup(t)...)
			}
			out, code := e2e.Run(t, time.Minute, env, append([]string{"validate"}, args...)...)
			if code == 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("validate: exit %d, want non-zero and %q in:\n%s", code, tc.want, out)
			}
			for _, more := range tc.more {
				if !strings.Contains(out, more) {
					t.Fatalf("validate output lacks %q:\n%s", more, out)
				}
			}
			if strings.Contains(out, literal) || strings.Contains(out, issueLiteral) || strings.Contains(out, "corp-token") ||
				strings.Contains(out, "default-backend-secret") || strings.Contains(out, secondSecret) {
				t.Fatalf("validate output leaks a credential:\n%s", out)
			}
			// A normal start refuses the same config with the same message.
			col := e2e.Start(t, "", e2e.Options{Env: env, Args: args, NoWait: true})
			code, err := col.Wait(time.Minute)
			if err != nil || code == 0 || !strings.Contains(col.Output(), tc.want) {
				t.Fatalf("start: exit %d (%v), want non-zero and %q in:\n%s", code, err, tc.want, col.Output())
			}
		})
	}
}

// grpcBackends is a fragment of gRPC exporters, each given as its id and one
// YAML line of fields, sending to https://collector.<name>.example, each in its
// own logs pipeline.
func grpcBackends(idFields ...string) string {
	var exps, pipes strings.Builder
	for i := 0; i+1 < len(idFields); i += 2 {
		id, field := idFields[i], idFields[i+1]
		name := id[strings.Index(id, "/")+1:]
		fmt.Fprintf(&exps, "  %s:\n    endpoint: https://collector.%s.example:4317\n    %s\n", id, name, field)
		fmt.Fprintf(&pipes, "    logs/%s:\n      receivers: [otlp]\n      exporters: [%s]\n", name, id)
	}
	return "exporters:\n" + exps.String() + "service:\n  pipelines:\n" + pipes.String()
}
