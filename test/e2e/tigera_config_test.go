// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// operatorConfig is a collector config in the shape the Tigera operator renders
// (pkg/render/otelcollector, as docs/architecture.md summarises it), written by
// us: otlp over HTTP with mutual TLS and a reloaded client CA, federation through
// the authn-proxy with the ServiceAccount token and the trusted bundle, otlp_grpc/
// and otlp_http/ exporters with headers from OTEL_EXPORTER_<NAME>_<HEADER>,
// memory_limiter in MiB, batch 2000/2000, health_check and a pull reader. The
// only substitutions: 127.0.0.1 and free ports for 0.0.0.0:4318/13133/8888, temp
// files for the operator's mount paths, and a short scrape_interval/timeout.
type operatorConfig struct {
	bind                                     string
	otlpPort, healthPort, metricsPort        int
	receiverCert, receiverKey, trustedBundle string
	tokenFile, federateTarget                string
	corpEndpoint, corpCA, corpCert, corpKey  string
	datadogEndpoint                          string
	extra                                    string // more exporters, appended under exporters:
	extraNames                               string // and their ids, appended to the pipelines
}

func (c operatorConfig) render() string {
	return fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: %[1]s:%[2]d
        tls:
          cert_file: %[5]s
          key_file: %[6]s
          client_ca_file: %[7]s
          client_ca_file_reload: true
          reload_interval: 1h
  prometheus:
    config:
      scrape_configs:
        - job_name: 'tigera-prometheus-federate'
          scrape_interval: 2s
          scrape_timeout: 2s
          scheme: https
          metrics_path: /federate
          params:
            'match[]': ['{__name__=~".+"}']
          honor_labels: true
          authorization:
            credentials_file: %[8]s
          tls_config:
            ca_file: %[7]s
          static_configs:
            - targets: ['%[9]s']

exporters:
  otlp_grpc/corp:
    endpoint: %[10]s
    headers:
      Authorization: ${env:OTEL_EXPORTER_CORP_AUTHORIZATION}
    tls:
      include_system_ca_certs_pool: true
      ca_file: %[11]s
      cert_file: %[12]s
      key_file: %[13]s
  otlp_http/datadog:
    endpoint: %[14]s
    headers:
      DD-API-KEY: ${env:OTEL_EXPORTER_DATADOG_DD_API_KEY}
    tls:
      include_system_ca_certs_pool: true
%[15]s
processors:
  memory_limiter:
    check_interval: 1s
    limit_mib: 409
    spike_limit_mib: 100
  batch:
    send_batch_size: 2000
    send_batch_max_size: 2000

extensions:
  health_check:
    endpoint: %[1]s:%[3]d

service:
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: "%[1]s"
                port: %[4]d
  extensions: [health_check]
  pipelines:
    logs:
      receivers: [otlp]
      processors: [memory_limiter, batch]
      exporters: [otlp_grpc/corp, otlp_http/datadog%[16]s]
    metrics:
      receivers: [prometheus]
      processors: [memory_limiter, batch]
      exporters: [otlp_grpc/corp, otlp_http/datadog%[16]s]
`, c.bind, c.otlpPort, c.healthPort, c.metricsPort, c.receiverCert, c.receiverKey, c.trustedBundle,
		c.tokenFile, c.federateTarget, c.corpEndpoint, c.corpCA, c.corpCert, c.corpKey, c.datadogEndpoint, c.extra, c.extraNames)
}

// TestOperatorRenderedConfigRuns runs the operator's config shape on our binary,
// with mutual TLS on the receiver and towards the corp backend, federation from a
// real Prometheus behind a bearer-token proxy, and logs flowing to both backends.
// It also shows the one part of that shape our safety rules refuse (a plaintext
// exporter not named plaintext-*) and that the certwatch variant in
// deploy/docs/tigera.md validates.
func TestOperatorRenderedConfigRuns(t *testing.T) {
	// The operator's trusted bundle: one CA for the receiver's clients and for the
	// Prometheus authn-proxy.
	bundle := testcerts.NewCA(t, "tigera-ca-bundle")
	dir := t.TempDir()
	receiver := bundle.Server(t, testcerts.Options{})
	fluentBit := bundle.Client(t, testcerts.Options{CommonName: "fluent-bit"})
	c := operatorConfig{
		bind:     "127.0.0.1",
		otlpPort: e2e.FreePort(t), healthPort: e2e.FreePort(t), metricsPort: e2e.FreePort(t),
		receiverCert:  filepath.Join(dir, "otel-collector-tls", "tls.crt"),
		receiverKey:   filepath.Join(dir, "otel-collector-tls", "tls.key"),
		trustedBundle: filepath.Join(dir, "tigera-ca-bundle.crt"),
		tokenFile:     filepath.Join(dir, "token"),
	}
	testcerts.WriteFile(t, c.receiverCert, receiver.CertPEM)
	testcerts.WriteFile(t, c.receiverKey, receiver.KeyPEM)
	testcerts.WriteFile(t, c.trustedBundle, bundle.CertPEM)
	testcerts.WriteFile(t, c.tokenFile, []byte(federationToken+"\n"))

	// Federation: a real Prometheus (HTTPS) behind a proxy that checks the token.
	promDir := t.TempDir()
	promCert, promKey := filepath.Join(promDir, "tls.crt"), filepath.Join(promDir, "tls.key")
	promServer := bundle.Server(t, testcerts.Options{})
	testcerts.WriteFile(t, promCert, promServer.CertPEM)
	testcerts.WriteFile(t, promKey, promServer.KeyPEM)
	target := e2e.NewDemoTarget(t)
	prom := e2e.StartPrometheus(t, e2e.PrometheusOptions{
		Targets: []string{target.Addr},
		TLS:     &e2e.PrometheusTLS{CertFile: promCert, KeyFile: promKey, CAFile: c.trustedBundle},
	})
	prom.WaitForQuery(t, `demo_request_duration_seconds_count`, 60*time.Second)
	proxy := newAuthProxy(t, testcerts.ServerTLS(t, promServer), prom.URL, prom.Client)
	c.federateTarget = proxy.addr

	// Backends: corp over gRPC with mutual TLS (exporter ca_file + cert_file/key_file),
	// datadog over HTTP trusting the system roots (SSL_CERT_FILE) with a header only.
	corp := newTLSBackend(t, "corp")
	c.corpEndpoint, c.corpCA, c.corpCert, c.corpKey = "https://"+corp.sink.GRPCAddr, corp.caFile, corp.certFile, corp.keyFile
	public := testcerts.NewCA(t, "public root")
	roots := filepath.Join(dir, "system-roots.crt")
	testcerts.WriteFile(t, roots, public.CertPEM)
	datadog := e2e.NewSink(t, otlpfixture.SinkOptions{TLS: testcerts.ServerTLS(t, public.Server(t, testcerts.Options{}))})
	c.datadogEndpoint = "https://" + datadog.HTTPAddr
	env := []string{
		"SSL_CERT_FILE=" + roots,
		"OTEL_EXPORTER_CORP_AUTHORIZATION=" + corpSecret,
		"OTEL_EXPORTER_DATADOG_DD_API_KEY=" + datadogSecret,
	}

	// What needs a change: the operator renders an http:// exporter with
	// tls::insecure; our rules want the plaintext choice visible in the name.
	mesh := e2e.NewSink(t, otlpfixture.SinkOptions{})
	for name, wantOK := range map[string]bool{"mesh": false, "plaintext-mesh": true} {
		v := c
		v.extra = fmt.Sprintf("  otlp_http/%s:\n    endpoint: http://%s\n    tls:\n      insecure: true\n", name, mesh.HTTPAddr)
		v.extraNames = ", otlp_http/" + name
		out, code := e2e.Run(t, 2*time.Minute, env, "validate", "--config", e2e.WriteConfig(t, v.render()))
		if (code == 0) != wantOK {
			t.Fatalf("validate with a plaintext exporter otlp_http/%s: exit %d, want ok=%v:\n%s", name, code, wantOK, out)
		}
		if !wantOK && !strings.Contains(out, "exporters::otlp_http/mesh: plaintext connection") {
			t.Fatalf("refusal does not name the exporter and the reason:\n%s", out)
		}
	}
	// deploy/docs/tigera.md's certwatch lines for this shape: the exporter's tls block
	// moves to certwatch/corp (which builds the whole TLS configuration, so any
	// tls field left on the exporter is refused), named as middleware.
	cw := c
	cw.corpCA, cw.corpCert, cw.corpKey = "", "", ""
	withCertwatch := strings.Replace(strings.Replace(strings.Replace(cw.render(),
		"    tls:\n      include_system_ca_certs_pool: true\n      ca_file: \n      cert_file: \n      key_file: \n", "    middlewares: [{id: certwatch/corp}]\n", 1),
		"extensions:\n  health_check:", fmt.Sprintf("extensions:\n  certwatch/corp:\n    ca_file: %s\n    cert_file: %s\n    key_file: %s\n  health_check:", corp.caFile, corp.certFile, corp.keyFile), 1),
		"extensions: [health_check]", "extensions: [health_check, certwatch/corp]", 1)
	if out, code := e2e.Run(t, 2*time.Minute, env, "validate", "--config", e2e.WriteConfig(t, withCertwatch)); code != 0 {
		t.Fatalf("the certwatch variant does not validate (exit %d):\n%s\n%s", code, out, withCertwatch)
	}

	// The shape itself, unchanged, runs.
	col := e2e.Start(t, c.render(), e2e.Options{Env: env, ReadyTimeout: 90 * time.Second})
	e2e.WaitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/", c.healthPort), http.StatusOK, 30*time.Second)

	receiverURL := fmt.Sprintf("https://127.0.0.1:%d", c.otlpPort)
	clientTLS := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: bundle.Pool(), Certificates: []tls.Certificate{fluentBit.TLSCertificate(t)}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Mutual TLS on the receiver: a client without a certificate is turned away.
	anon := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: bundle.Pool()}
	if err := e2e.NewHTTPClient(receiverURL, anon).SendLogs(ctx, otlpfixture.FluentBitLogs(1, 0), otlpfixture.Encoding{}); err == nil {
		t.Fatal("the receiver accepted a client without a certificate")
	}
	client := e2e.NewHTTPClient(receiverURL, clientTLS)
	const perRequest, requests = 500, 4
	for i := 0; i < requests; i++ {
		if err := client.SendLogs(ctx, otlpfixture.FluentBitLogs(perRequest, int64(i*perRequest)), otlpfixture.Encoding{Gzip: i%2 == 0}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	for name, s := range map[string]*otlpfixture.Sink{"corp": corp.sink, "datadog": datadog} {
		s.WaitForLogRecords(t, perRequest*requests, 2*time.Minute)
		s.WaitForDataPoints(t, 1, 2*time.Minute) // federated through the proxy
		for _, r := range s.Requests() {
			switch name {
			case "corp":
				if r.PeerCertSubject != corp.clientCN || r.Header.Get("Authorization") != corpSecret || r.Header.Get("DD-API-KEY") != "" {
					t.Fatalf("corp: client certificate %q, Authorization %s, DD-API-KEY present %v", r.PeerCertSubject, redactIf(r.Header.Get("Authorization")), r.Header.Get("DD-API-KEY") != "")
				}
			case "datadog":
				if r.PeerCertSubject != "" || r.Header.Get("DD-API-KEY") != datadogSecret || r.Header.Get("Authorization") != "" {
					t.Fatalf("datadog: client certificate %q, DD-API-KEY %s, Authorization present %v", r.PeerCertSubject, redactIf(r.Header.Get("DD-API-KEY")), r.Header.Get("Authorization") != "")
				}
			}
		}
	}
	if allowed, _ := proxy.counts(); allowed["/federate"] == 0 {
		t.Fatal("no /federate request passed the proxy")
	}
	e2e.WaitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", c.metricsPort), http.StatusOK, 30*time.Second)
	if code, err := col.Stop(60 * time.Second); err != nil || code != 0 {
		t.Fatalf("stop: exit %d, %v", code, err)
	}
	for _, leak := range []string{corpSecret, datadogSecret, federationToken} {
		if strings.Contains(col.Output(), leak) {
			t.Fatal("a credential reached the collector's output")
		}
	}
}
