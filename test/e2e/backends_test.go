// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// The credentials of the three list backends: each must reach its own backend
// only, and appear in no rendered config and no log line.
const (
	corpSecret    = "Bearer corp-backend-secret-51c0de"
	datadogSecret = "dd-api-key-9e77aa"
	meshTenant    = "mesh-tenant-3b8d"
)

// listBackends is the one step that adds three backends to the gateway: a
// `backends:` list (components/backendsconverter), in the Tigera exporter shape.
//   - corp: gRPC, mutual TLS (CA and client certificate through certwatch), Authorization;
//   - datadog: HTTP, header only, the server verified against the system roots;
//   - plaintext-mesh: HTTP without TLS, the name being the visible opt-in.
func listBackends(corp *tlsBackend, datadogAddr, meshAddr, meshName string) string {
	return fmt.Sprintf(`backends:
  - name: corp
    endpoint: https://%s
    protocol: grpc
    headers: [Authorization]
    tls:
      ca_file: %s
      cert_file: %s
      key_file: %s
  - name: datadog
    endpoint: https://%s
    protocol: http
    headers: [DD-API-KEY]
  - name: %s
    endpoint: http://%s
    protocol: http
    headers: [X-Scope-OrgID]
`, corp.sink.GRPCAddr, corp.caFile, corp.certFile, corp.keyFile, datadogAddr, meshName, meshAddr)
}

// publicRoots is a CA that SSL_CERT_FILE=file makes the system roots, as a
// public CA is for a vendor's endpoint; its backends ask for no client certificate.
type publicRoots struct {
	ca   *testcerts.CA
	file string
}

func newPublicRoots(t *testing.T) publicRoots {
	t.Helper()
	ca := testcerts.NewCA(t, "public root")
	file := filepath.Join(t.TempDir(), "system-roots.crt")
	testcerts.WriteFile(t, file, ca.CertPEM)
	return publicRoots{ca: ca, file: file}
}

// sink is a backend serving a certificate of the public CA.
func (p publicRoots) sink(t *testing.T) *otlpfixture.Sink {
	t.Helper()
	return e2e.NewSink(t, otlpfixture.SinkOptions{TLS: testcerts.ServerTLS(t, p.ca.Server(t, testcerts.Options{}))})
}

func TestGatewayBackendsList(t *testing.T) {
	def, corp := newTLSBackend(t, "default"), newTLSBackend(t, "corp")
	public := newPublicRoots(t)
	datadog := public.sink(t)
	publicCAFile := public.file
	mesh := e2e.NewSink(t, otlpfixture.SinkOptions{})

	g := newGatewayEnv(t, def, nil)
	env := append(slices.Clone(g.env),
		"SSL_CERT_FILE="+publicCAFile,
		"OTEL_EXPORTER_CORP_AUTHORIZATION="+corpSecret,
		"OTEL_EXPORTER_DATADOG_DD_API_KEY="+datadogSecret,
		"OTEL_EXPORTER_PLAINTEXT_MESH_X_SCOPE_ORGID="+meshTenant,
		// Four backends of three signals share the test's volume.
		"RELAY_BACKEND_QUEUE_BYTES=16777216", "OTEL_EXPORTER_DEFAULT_QUEUE_BYTES=16777216",
	)
	list := e2e.WriteConfig(t, listBackends(corp, datadog.HTTPAddr, mesh.HTTPAddr, "plaintext-mesh"))
	// Plaintext receivers (the explicit opt-out of gateway.yaml's mTLS): the
	// subject here is the exporters.
	plain := gatewayConfig("receiver-plaintext.yaml")
	args := []string{"--config", gatewayConfig("gateway.yaml"), "--config", plain, "--config", list}

	// The safety rules apply to the expansion: the same plaintext backend under a
	// name that does not say so is refused.
	bad := e2e.WriteConfig(t, listBackends(corp, datadog.HTTPAddr, mesh.HTTPAddr, "mesh"))
	badEnv := append(slices.Clone(env), "OTEL_EXPORTER_MESH_X_SCOPE_ORGID="+meshTenant)
	if out, code := e2e.Run(t, 2*time.Minute, badEnv, "validate", "--config", gatewayConfig("gateway.yaml"), "--config", plain, "--config", bad); code == 0 ||
		!strings.Contains(out, "exporters::otlp_http_wire/mesh: plaintext connection") {
		t.Fatalf("validate with a plaintext backend not named plaintext-*: exit %d, want a refusal naming it:\n%s", code, out)
	}

	col := e2e.Start(t, "", e2e.Options{Env: env, Args: args, ReadyTimeout: 90 * time.Second})
	const perRequest, requests = 250, 4
	client := e2e.NewHTTPClient("http://"+g.httpAddr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := 0; i < requests; i++ {
		if err := client.SendLogs(ctx, otlpfixture.FluentBitLogs(perRequest, int64(i*perRequest)), otlpfixture.Encoding{}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	const total = perRequest * requests

	type want struct {
		sink     *otlpfixture.Sink
		protocol string
		header   string // the one credential header it must see
		value    string
		clientCN string // "" when it must see no client certificate
	}
	backends := map[string]want{
		"default":        {def.sink, "http", "Authorization", defaultSecret, def.clientCN},
		"corp":           {corp.sink, "grpc", "Authorization", corpSecret, corp.clientCN},
		"datadog":        {datadog, "http", "DD-API-KEY", datadogSecret, ""},
		"plaintext-mesh": {mesh, "http", "X-Scope-OrgID", meshTenant, ""},
	}
	allHeaders := []string{"Authorization", "DD-API-KEY", "X-Scope-OrgID"}
	for name, w := range backends {
		w.sink.WaitForLogRecords(t, total, 2*time.Minute)
		counts := w.sink.SeqCounts()
		for seq := int64(0); seq < total; seq++ {
			if counts[seq] == 0 {
				t.Fatalf("%s: record seq=%d never arrived (%d distinct of %d)", name, seq, len(counts), total)
			}
		}
		for _, r := range w.sink.Requests() {
			if r.Protocol != w.protocol {
				t.Fatalf("%s: request over %s, want %s", name, r.Protocol, w.protocol)
			}
			if r.PeerCertSubject != w.clientCN {
				t.Fatalf("%s: client certificate %q, want %q", name, r.PeerCertSubject, w.clientCN)
			}
			for _, h := range allHeaders {
				got := r.Header.Get(h)
				switch {
				case h == w.header && got != w.value:
					t.Fatalf("%s: header %s = %s, want its own value", name, h, redactIf(got))
				case h != w.header && got != "":
					t.Fatalf("%s: received another backend's header %s", name, h)
				}
			}
		}
	}

	// print-config shows the expansion and none of the secrets.
	rendered, code := e2e.Run(t, 2*time.Minute, env, append([]string{"print-config"}, args...)...)
	if code != 0 {
		t.Fatalf("print-config exited %d:\n%s", code, rendered)
	}
	for _, s := range []string{"otlp_grpc/corp", "certwatch/corp", "otlp_http_wire/datadog", "otlp_http_wire/plaintext-mesh"} {
		if !strings.Contains(rendered, s) {
			t.Fatalf("print-config lacks %q:\n%s", s, rendered)
		}
	}
	for _, s := range []string{"certwatch/datadog", "backends:", "backend_defaults", "safeconfig_header_env"} {
		if strings.Contains(rendered, s) {
			t.Fatalf("print-config contains %q:\n%s", s, rendered)
		}
	}
	if code, err := col.Stop(60 * time.Second); err != nil || code != 0 {
		t.Fatalf("stop: exit %d, %v", code, err)
	}
	for _, leak := range []string{corpSecret, datadogSecret, meshTenant} {
		if strings.Contains(rendered, leak) || strings.Contains(col.Output(), leak) {
			t.Fatalf("a backend credential reached print-config or the collector's output")
		}
	}
}
