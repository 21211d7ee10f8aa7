// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// TestGatewayFederationTokenNeverFollowsARedirect runs gateway.yaml against a
// federation target that answers every request (the /federate scrape and
// federation_types' /api/v1/metadata) with a redirect to plain http on the same
// host. Go's client would carry the Authorization header there (same host name),
// and Prometheus's adds it to every request it sends: the token must never
// arrive at the redirect's target.
func TestGatewayFederationTokenNeverFollowsARedirect(t *testing.T) {
	const token = "federation-token-5d1e7c"
	var mu sync.Mutex
	var redirected, leaked []string

	catcher := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, fmt.Sprintf("%s (Authorization sent: %v)", r.URL.Path, r.Header.Get("Authorization") != ""))
		mu.Unlock()
		http.NotFound(w, r)
	})}
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = catcher.Serve(cl) }()
	t.Cleanup(func() { _ = catcher.Close() })

	ca := testcerts.NewCA(t, "federation target CA")
	kp := ca.Server(t, testcerts.Options{})
	target := &http.Server{ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{kp.TLSCertificate(t)}},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			redirected = append(redirected, fmt.Sprintf("%s (token ok: %v)", r.URL.Path, r.Header.Get("Authorization") == "Bearer "+token))
			mu.Unlock()
			http.Redirect(w, r, "http://"+cl.Addr().String()+r.URL.RequestURI(), http.StatusFound) //nolint:gosec // G710: the redirect is the test's fixture: this target sends the scraper to the test's own loopback catcher to check the token does not follow
		})}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = target.ServeTLS(tl, "", "") }()
	t.Cleanup(func() { _ = target.Close() })

	dir := t.TempDir()
	caFile, tokenFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	testcerts.WriteFile(t, caFile, ca.CertPEM)
	testcerts.WriteFile(t, tokenFile, []byte(token))
	backend := e2e.NewBackendTLS(t, "default")
	sink := e2e.NewSink(t, otlpfixture.SinkOptions{TLS: backend.Server})
	gw := e2e.NewGateway(t, e2e.GatewayOptions{BackendURL: "https://" + sink.HTTPAddr, Backend: backend, Env: append(shardEnv(t, manifest.FederationOverlay(t), 0),
		"RELAY_FEDERATION_TARGET="+tl.Addr().String(),
		"RELAY_FEDERATION_CA_FILE="+caFile,
		"RELAY_FEDERATION_TOKEN_FILE="+tokenFile,
	)})
	// Federation runs in its own workload (config/federation.yaml).
	col := e2e.Start(t, "", e2e.Options{Env: gw.Env, Args: []string{"--config=" + gatewayConfig("federation.yaml")}, ReadyTimeout: 90 * time.Second})

	// federation_types reads the metadata at start; the first scrape comes
	// within one scrape_interval (30s).
	saw := func(path string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range redirected {
			if strings.HasPrefix(r, path+" (token ok: true)") {
				return true
			}
		}
		return false
	}
	if !otlpfixture.WaitFor(75*time.Second, func() bool { return saw("/federate") && saw("/api/v1/metadata") }) {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the target did not get both requests with the token; it got %v\n%s", redirected, tail(col.Output()))
	}
	time.Sleep(2 * time.Second) // a followed redirect would arrive right after
	mu.Lock()
	defer mu.Unlock()
	t.Logf("target answered with redirects to: %v", redirected)
	for _, l := range leaked {
		if strings.Contains(l, "Authorization sent: true") {
			t.Errorf("the federation token followed a redirect to plain http: %v", leaked)
			break
		}
	}
	if strings.Contains(col.Output(), token) {
		t.Error("the collector's log contains the token")
	}
}
