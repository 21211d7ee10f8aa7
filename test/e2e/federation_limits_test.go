package e2e_test

import (
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// TestFederationRunawayAnswerIsBounded: a /federate that never stops answering
// (runaway or hostile) is read up to body_size_limit, not until the scrape
// timeout: memory_limiter only sees a scrape once it is parsed, so nothing
// else stops the read. The answer is capped here so that a relay without the
// limit reads all of it and the test fails instead of exhausting the machine.
func TestFederationRunawayAnswerIsBounded(t *testing.T) {
	const limit, answerCap = 1 << 20, 48 << 20
	files := newInClusterFiles(t, federationToken)
	// One series per line with a 4000-byte label value: few series per MiB, so
	// that even the whole capped answer parses in little memory.
	line := []byte(`runaway{v="` + strings.Repeat("x", 4000) + "\"} 1\n")
	done := make(chan int64, 16)
	mux := http.NewServeMux()
	mux.HandleFunc("/federate", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		var n int64
		for n < answerCap {
			m, err := w.Write(line)
			n += int64(m)
			if err != nil {
				break // the scraper hung up
			}
		}
		done <- n
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{files.server.TLSCertificate(t)}}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	_, gw := newFederationGateway(t, files, ln.Addr().String(),
		"RELAY_FEDERATION_BODY_SIZE_LIMIT=1MB", // = limit
		"RELAY_FEDERATION_INTERVAL=10s", "RELAY_FEDERATION_TIMEOUT=8s")
	col := e2e.Start(t, "", e2e.Options{Env: gw.Env, Args: []string{"--config=" + gatewayConfig("federation.yaml")}, ReadyTimeout: 90 * time.Second})
	var n int64
	select {
	case n = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no scrape of /federate within 2 minutes\n%s", tail(col.Output()))
	}
	// What the kernel buffers on loopback comes on top of what the scraper
	// read: a few MiB, far below the cap.
	if n >= answerCap/2 {
		t.Fatalf("the relay read %d MiB of a /federate answer without stopping (body_size_limit %d MiB)", n>>20, limit>>20)
	}
	t.Logf("the relay hung up after %.1f MiB had been written (limit %d MiB)", float64(n)/(1<<20), limit>>20)
}
