// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// The secrets the two backends' headers carry. They must reach their own backend
// and appear nowhere else: not in the rendered config, not in the logs.
const (
	defaultSecret = "Bearer default-backend-secret-7f3a9c"
	secondSecret  = "second-backend-api-key-e41b02"
)

func gatewayConfig(name string) string {
	return filepath.Join(e2e.RepoRoot(), "config", name)
}

// tlsBackend is one external OTLP backend: a sink with its own server CA, which
// only accepts clients presenting a certificate from its own client CA, and the
// files the collector's certwatch instance for it reads.
type tlsBackend struct {
	sink                      *otlpfixture.Sink
	clientCN                  string
	caFile, certFile, keyFile string
}

func newTLSBackend(t *testing.T, name string) *tlsBackend {
	t.Helper()
	b := e2e.NewBackendTLS(t, name)
	return &tlsBackend{
		sink:     e2e.NewSink(t, otlpfixture.SinkOptions{TLS: b.Server}),
		clientCN: b.ClientCN,
		caFile:   b.CAFile, certFile: b.CertFile, keyFile: b.KeyFile,
	}
}

// gatewayEnv is the environment the StatefulSet would give the gateway, pointed at
// loopback test peers and free ports. The kube API and the Prometheus server are
// not the subject here: k8s_attributes gets a kubeconfig for a closed port (it
// keeps retrying in the background) and federation scrapes a closed port.
type gatewayEnv struct {
	env      []string
	httpAddr string
}

func newGatewayEnv(t *testing.T, def, second *tlsBackend) *gatewayEnv {
	t.Helper()
	// Later entries win over e2e.NewGateway's defaults (os/exec keeps the last).
	env := []string{"OTEL_EXPORTER_DEFAULT_AUTHORIZATION=" + defaultSecret}
	if second != nil {
		env = append(env,
			"OTEL_EXPORTER_SECOND_ENDPOINT="+second.sink.GRPCAddr,
			"OTEL_EXPORTER_SECOND_X_API_KEY="+secondSecret,
			"OTEL_EXPORTER_SECOND_CA_FILE="+second.caFile,
			"OTEL_EXPORTER_SECOND_CERT_FILE="+second.certFile,
			"OTEL_EXPORTER_SECOND_KEY_FILE="+second.keyFile,
		)
	}
	gw := e2e.NewGateway(t, e2e.GatewayOptions{
		BackendURL: "https://" + def.sink.HTTPAddr,
		Backend:    &e2e.BackendTLS{CAFile: def.caFile, CertFile: def.certFile, KeyFile: def.keyFile},
		Env:        env,
	})
	return &gatewayEnv{env: gw.Env, httpAddr: strings.TrimPrefix(gw.HTTPURL, "http://")}
}

// plaintextGateway is gateway.yaml with its receivers' mutual TLS explicitly
// turned off (config/receiver-plaintext.yaml): these tests send from loopback
// without client certificates.
func plaintextGateway() []string {
	return []string{"--config", gatewayConfig("gateway.yaml"), "--config", gatewayConfig("receiver-plaintext.yaml")}
}

// twoBackendArgs is how the StatefulSet runs the gateway with a second backend
// (plus the plaintext receiver opt-in, last, so that [:4] is the two files).
func twoBackendArgs(extra ...string) []string {
	return append([]string{
		"--config", gatewayConfig("gateway.yaml"),
		"--config", gatewayConfig("backends/second.yaml"),
		"--feature-gates=confmap.enableMergeAppendOption",
		"--config", gatewayConfig("receiver-plaintext.yaml"),
	}, extra...)
}

func TestGatewayFluentBitLogsToTwoTLSBackends(t *testing.T) {
	def, second := newTLSBackend(t, "default"), newTLSBackend(t, "second")
	g := newGatewayEnv(t, def, second)
	col := e2e.Start(t, "", e2e.Options{Env: g.env, Args: twoBackendArgs(), ReadyTimeout: 90 * time.Second})

	// fluent-bit's opentelemetry output: OTLP/HTTP protobuf, several chunks.
	const perRequest, requests = 250, 8
	client := e2e.NewHTTPClient("http://"+g.httpAddr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := 0; i < requests; i++ {
		ld := otlpfixture.FluentBitLogs(perRequest, int64(i*perRequest))
		if err := client.SendLogs(ctx, ld, otlpfixture.Encoding{Gzip: i%2 == 1}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	const total = perRequest * requests

	for name, b := range map[string]*tlsBackend{"default": def, "second": second} {
		b.sink.WaitForLogRecords(t, total, 2*time.Minute)
		counts := b.sink.SeqCounts()
		for seq := int64(0); seq < total; seq++ {
			if counts[seq] == 0 {
				t.Fatalf("%s backend: record seq=%d never arrived (%d distinct of %d)", name, seq, len(counts), total)
			}
		}
		checkFluentBitShape(t, name, b.sink.Logs()[0])
	}

	// Each backend saw its own credential on every request, and only its own, over
	// mutual TLS with its own client certificate.
	for _, r := range def.sink.Requests() {
		if r.Protocol != "http" || r.Header.Get("Authorization") != defaultSecret || r.Header.Get("X-Api-Key") != "" {
			t.Fatalf("default backend request: protocol %s, Authorization %q, X-Api-Key present %v", r.Protocol, redactIf(r.Header.Get("Authorization")), r.Header.Get("X-Api-Key") != "")
		}
		if r.PeerCertSubject != def.clientCN {
			t.Fatalf("default backend saw client certificate %q, want %q", r.PeerCertSubject, def.clientCN)
		}
	}
	for _, r := range second.sink.Requests() {
		if r.Protocol != "grpc" || r.Header.Get("X-Api-Key") != secondSecret || r.Header.Get("Authorization") != "" {
			t.Fatalf("second backend request: protocol %s, X-Api-Key %q, Authorization present %v", r.Protocol, redactIf(r.Header.Get("X-Api-Key")), r.Header.Get("Authorization") != "")
		}
		if r.PeerCertSubject != second.clientCN {
			t.Fatalf("second backend saw client certificate %q, want %q", r.PeerCertSubject, second.clientCN)
		}
	}

	// The rendered configuration names both backends but holds neither secret.
	rendered, code := e2e.Run(t, 2*time.Minute, g.env, append([]string{"print-config"}, twoBackendArgs()...)...)
	if code != 0 {
		t.Fatalf("print-config exited %d:\n%s", code, rendered)
	}
	for _, want := range []string{"otlp_http_wire/default", "otlp_grpc/second", "certwatch/second"} {
		if !strings.Contains(rendered, want) {
			t.Fatalf("print-config output lacks %q:\n%s", want, rendered)
		}
	}
	for _, leak := range []string{defaultSecret, "default-backend-secret", secondSecret, "safeconfig_header_env"} {
		if strings.Contains(rendered, leak) {
			t.Fatalf("print-config output contains %q", leak)
		}
	}

	// Stop cleanly, then make sure neither secret ever reached the logs.
	if code, err := col.Stop(60 * time.Second); err != nil || code != 0 {
		t.Fatalf("stop: exit %d, %v", code, err)
	}
	for _, leak := range []string{"default-backend-secret", secondSecret} {
		if strings.Contains(col.Output(), leak) {
			t.Fatalf("collector output contains the secret %q", leak)
		}
	}
}

// checkFluentBitShape asserts a delivered batch still looks like what fluent-bit
// sent: pod identity on the resource and the map body with the kubernetes map.
func checkFluentBitShape(t *testing.T, backend string, ld plog.Logs) {
	t.Helper()
	rl := ld.ResourceLogs().At(0)
	for k, want := range map[string]string{"k8s.namespace.name": "payments", "k8s.pod.name": "checkout-7d9f8b6c5-x2x4z", "service.name": "flows"} {
		if v, ok := rl.Resource().Attributes().Get(k); !ok || v.Str() != want {
			t.Fatalf("%s backend: resource attribute %s = %v, want %q", backend, k, v.AsRaw(), want)
		}
	}
	body := rl.ScopeLogs().At(0).LogRecords().At(0).Body()
	if body.Type() != pcommon.ValueTypeMap {
		t.Fatalf("%s backend: body type %s, want Map", backend, body.Type())
	}
	k, ok := body.Map().Get("kubernetes")
	if !ok {
		t.Fatalf("%s backend: body lost its kubernetes map: %v", backend, body.AsRaw())
	}
	if ns, _ := k.Map().Get("namespace_name"); ns.Str() != "payments" {
		t.Fatalf("%s backend: body kubernetes.namespace_name = %q", backend, ns.Str())
	}
	if l, ok := body.Map().Get("log"); !ok || !strings.Contains(l.Str(), "flow src=") {
		t.Fatalf("%s backend: body log line missing", backend)
	}
}

func redactIf(s string) string {
	if s == "" {
		return ""
	}
	return "<set, value not shown>"
}

// writeFile writes a config fragment for a safety-rule case.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// secondFragment returns config/backends/second.yaml with edits applied.
func secondFragment(t *testing.T, edits ...string) string {
	t.Helper()
	raw, err := os.ReadFile(gatewayConfig("backends/second.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(s, edits[i]) {
			t.Fatalf("backends/second.yaml has no %q", edits[i])
		}
		s = strings.ReplaceAll(s, edits[i], edits[i+1])
	}
	return writeFile(t, "fragment.yaml", s)
}

// TestGatewayMemoryLimiterFollowsCgroupLimit runs the gateway inside a real memory
// cgroup of the sizes a StatefulSet would set and reads what memory_limiter
// computed from it: only the container limit changes, and the limits follow.
func TestGatewayMemoryLimiterFollowsCgroupLimit(t *testing.T) {
	def := newTLSBackend(t, "default")
	for _, tc := range []struct {
		limit             int64
		hardMiB, spikeMiB int
		gomemlimit        string // what the StatefulSet's divisor trick yields (config/README.md)
	}{
		{512 << 20, 409, 102, "409MiB"},
		{2 << 30, 1638, 409, "1638MiB"},
	} {
		t.Run(fmt.Sprintf("%dMiB", tc.limit>>20), func(t *testing.T) {
			cg := e2e.NewMemoryCgroup(t, tc.limit)
			g := newGatewayEnv(t, def, nil)
			// The collector enters the cgroup before it execs, so the limit applies
			// from the first allocation on, as in a container.
			col := cg.StartNoWait(t, plaintextGateway(), append(g.env, "GOMEMLIMIT="+tc.gomemlimit))
			if err := col.WaitForOutput("Memory limiter configured", 90*time.Second); err != nil {
				t.Fatalf("%v\n%s", err, col.Output())
			}
			out := col.Output()
			want := fmt.Sprintf(`"limit_mib": %d, "spike_limit_mib": %d`, tc.hardMiB, tc.spikeMiB)
			if !strings.Contains(out, want) {
				t.Fatalf("memory_limiter under a %d MiB cgroup: want %s in:\n%s", tc.limit>>20, want, out)
			}
			if wantTotal := fmt.Sprintf(`"total_memory_mib": %d`, tc.limit>>20); !strings.Contains(out, wantTotal) {
				t.Fatalf("memory_limiter did not read the cgroup limit: want %s in:\n%s", wantTotal, out)
			}
			t.Logf("cgroup %d MiB: %s, GOMEMLIMIT=%s", tc.limit>>20, want, tc.gomemlimit)
		})
	}
}
