package e2e_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// TestGatewayHeaderOnlyDefaultBackend: the default backend as a public OTLP
// service is reached (an Authorization header, a certificate from a CA in the
// system roots, no client certificate): config/gateway.yaml with only the
// endpoint and the header set, and no CA, certificate or key file anywhere. The
// test's CA stands in for the system roots through SSL_CERT_FILE, which Go's
// system pool reads.
func TestGatewayHeaderOnlyDefaultBackend(t *testing.T) {
	ca := testcerts.NewCA(t, "public CA")
	sink := e2e.NewSink(t, e2e.SinkOptions{TLS: testcerts.ServerTLS(t, ca.Server(t, testcerts.Options{}))})
	roots := filepath.Join(t.TempDir(), "roots.pem")
	testcerts.WriteFile(t, roots, ca.CertPEM)

	gw := e2e.NewGateway(t, e2e.GatewayOptions{BackendURL: "https://" + sink.HTTPAddr, Backend: &e2e.BackendTLS{}})
	var env []string
	for _, e := range gw.Env {
		// No file of the default backend's: what the StatefulSet sets without
		// components/backend-default-mtls.
		if !strings.HasPrefix(e, "OTEL_EXPORTER_DEFAULT_CA_FILE=") && !strings.HasPrefix(e, "OTEL_EXPORTER_DEFAULT_CERT_FILE=") &&
			!strings.HasPrefix(e, "OTEL_EXPORTER_DEFAULT_KEY_FILE=") && !strings.HasPrefix(e, "RELAY_FEDERATION_CA_FILE=") {
			env = append(env, e)
		}
	}
	env = append(env, "SSL_CERT_FILE="+roots, "OTEL_EXPORTER_DEFAULT_AUTHORIZATION="+defaultSecret)
	// Run from an empty directory: no /certs/default/... is there to be found.
	e2e.Start(t, "", e2e.Options{Env: env, Args: gw.Args, ReadyTimeout: 90 * time.Second})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e2e.NewHTTPClient(gw.HTTPURL, nil).SendLogs(ctx, e2e.FluentBitLogs(100, 0), e2e.Encoding{}); err != nil {
		t.Fatal(err)
	}
	sink.WaitForLogRecords(t, 100, time.Minute)
	for _, r := range sink.Requests() {
		if r.Header.Get("Authorization") != defaultSecret {
			t.Errorf("request without the Authorization header (present: %v)", r.Header.Get("Authorization") != "")
		}
		if r.PeerCertSubject != "" {
			t.Errorf("the gateway presented client certificate %q; a header-only backend gets none", r.PeerCertSubject)
		}
	}
}
