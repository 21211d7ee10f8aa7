// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// TestFederationRunawayAnswerIsBounded: a /federate answer over
// body_size_limit (runaway or hostile) fails the scrape before it is parsed:
// memory_limiter only sees a scrape once it is parsed, so nothing else would
// stop it. Prometheus's scraper still reads the rest of the answer to reuse the
// connection, but discards it; so the answer is capped here, and the test
// watches what is parsed: nothing of the answer reaches the backend, and the
// scrape is reported failed (up 0).
func TestFederationRunawayAnswerIsBounded(t *testing.T) {
	const answerCap = 16 << 20 // the limit is 1 MiB
	files := newInClusterFiles(t, federationToken)
	// One series per line with a 4000-byte label value (under
	// label_value_length_limit): few series, whatever is parsed.
	line := []byte(`runaway{v="` + strings.Repeat("x", 4000) + "\"} 1\n")
	mux := http.NewServeMux()
	mux.HandleFunc("/federate", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		for n := 0; n < answerCap; n += len(line) {
			if _, err := w.Write(line); err != nil {
				return // the scraper hung up
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{Certificates: []tls.Certificate{files.server.TLSCertificate(t)}}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	sink, gw := newFederationGateway(t, files, ln.Addr().String(),
		"RELAY_FEDERATION_BODY_SIZE_LIMIT=1MB",
		"RELAY_FEDERATION_INTERVAL=10s", "RELAY_FEDERATION_TIMEOUT=8s")
	col := e2e.Start(t, "", e2e.Options{Env: gw.Env, Args: []string{"--config=" + gatewayConfig("federation.yaml")}, ReadyTimeout: 90 * time.Second})
	up, ok := found{}, false
	if !otlpfixture.WaitFor(2*time.Minute, func() bool { up, ok = latest(sink, "up"); return ok }) {
		t.Fatalf("no scrape of /federate reported its outcome within 2 minutes\n%s", tail(col.Output()))
	}
	if _, parsed := latest(sink, "runaway"); parsed {
		t.Errorf("the series of a /federate answer over body_size_limit reached the backend: it was read and parsed whole")
	}
	if v := up.metric.Gauge().DataPoints().At(0).DoubleValue(); v != 0 {
		t.Errorf("up = %v for a /federate answer over body_size_limit, want 0 (a failed scrape)", v)
	}
	if err := col.WaitForOutput("body size limit exceeded", 30*time.Second); err != nil {
		t.Errorf("the failed scrape is not logged with its reason: %v", err)
	}
}
