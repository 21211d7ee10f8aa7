// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// BackendTLS is the TLS identity of one external OTLP backend: the server side a
// sink serves with (client certificates required), and the files the gateway's
// certwatch instance reads to reach it.
type BackendTLS struct {
	Server                    *tls.Config
	CAFile, CertFile, KeyFile string
	ClientCN                  string // the common name of the gateway's client certificate
}

// NewBackendTLS issues a server CA and a client CA for a backend called name.
func NewBackendTLS(t tb.T, name string) *BackendTLS {
	t.Helper()
	serverCA := testcerts.NewCA(t, name+" server CA")
	clientCA := testcerts.NewCA(t, name+" client CA")
	server := serverCA.Server(t, testcerts.Options{})
	cn := "otelcol-relay to " + name
	client := clientCA.Client(t, testcerts.Options{CommonName: cn})
	dir := t.TempDir()
	b := &BackendTLS{
		ClientCN: cn,
		Server:   testcerts.ServerTLS(t, server, clientCA),
		CAFile:   filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
	}
	testcerts.WriteFile(t, b.CAFile, serverCA.CertPEM)
	testcerts.WriteFile(t, b.CertFile, client.CertPEM)
	testcerts.WriteFile(t, b.KeyFile, client.KeyPEM)
	return b
}

// ReceiverTLS is the gateway's receiver identity (config/receiver-tls.yaml) and
// the client side a fluent-bit sender presents.
type ReceiverTLS struct {
	CertFile, KeyFile, ClientCAFile string
	// Client is what a sender dials with: it trusts the receiver's CA and
	// presents a client certificate the receiver accepts.
	Client *tls.Config
}

// NewReceiverTLS issues the receiver's server certificate and a fluent-bit client
// certificate.
func NewReceiverTLS(t tb.T) *ReceiverTLS {
	t.Helper()
	serverCA := testcerts.NewCA(t, "receiver server CA")
	clientCA := testcerts.NewCA(t, "fluent-bit client CA")
	server := serverCA.Server(t, testcerts.Options{})
	client := clientCA.Client(t, testcerts.Options{CommonName: "fluent-bit"})
	dir := t.TempDir()
	r := &ReceiverTLS{
		CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"), ClientCAFile: filepath.Join(dir, "client-ca.crt"),
	}
	testcerts.WriteFile(t, r.CertFile, server.CertPEM)
	testcerts.WriteFile(t, r.KeyFile, server.KeyPEM)
	testcerts.WriteFile(t, r.ClientCAFile, clientCA.CertPEM)
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.Cert)
	r.Client = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		RootCAs:      roots,
		Certificates: []tls.Certificate{client.TLSCertificate(t)},
	}
	return r
}

// GatewayOptions says where the gateway's default backend is and how it is run.
type GatewayOptions struct {
	// BackendURL is the default backend's OTLP/HTTP base URL (https://...).
	BackendURL string
	Backend    *BackendTLS
	// Receiver is the receivers' mTLS identity (gateway.yaml requires it). When
	// nil, config/receiver-plaintext.yaml is merged: the explicit plaintext opt-in.
	Receiver *ReceiverTLS
	// QueueDir is the persistent queue's directory; a fresh temp dir when empty.
	QueueDir string
	// Env is appended last, so it overrides the defaults above.
	Env []string
}

// Gateway is config/gateway.yaml as the StatefulSet runs it, pointed at loopback
// peers and free ports.
type Gateway struct {
	Env  []string
	Args []string
	// HTTPURL is the OTLP/HTTP receiver's base URL (https:// with a Receiver).
	HTTPURL, GRPCAddr, PprofAddr, MetricsAddr, HealthAddr string
	// DrainAddr serves the admission extension's GET /drain and /ready.
	DrainAddr string
	QueueDir  string
	// HandoffAddr is peer_handoff's server, once Peers made the gateway a
	// peer; empty otherwise.
	HandoffAddr string
}

// NewGateway prepares the environment and arguments for config/gateway.yaml (the
// relay); its environment also runs config/federation.yaml. The kube API and the
// Prometheus server are not the subject of the tests that use it: k8s_attributes
// gets a kubeconfig for a closed port (it retries in the background and passes
// data through) and federation, unless Env overrides it, scrapes a closed port.
func NewGateway(t tb.T, o GatewayOptions) *Gateway {
	t.Helper()
	dir := t.TempDir()
	closed := FreeAddr(t)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	testcerts.WriteFile(t, kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`, closed)))
	token := filepath.Join(dir, "federation-token")
	testcerts.WriteFile(t, token, []byte("federation-token\n"))
	if o.QueueDir == "" {
		o.QueueDir = filepath.Join(dir, "queue")
	}
	httpPort, grpcPort, pprofPort, metricsPort, healthPort := FreePort(t), FreePort(t), FreePort(t), FreePort(t), FreePort(t)
	g := &Gateway{
		HTTPURL:     fmt.Sprintf("http://127.0.0.1:%d", httpPort),
		GRPCAddr:    fmt.Sprintf("127.0.0.1:%d", grpcPort),
		PprofAddr:   fmt.Sprintf("127.0.0.1:%d", pprofPort),
		MetricsAddr: fmt.Sprintf("127.0.0.1:%d", metricsPort),
		HealthAddr:  fmt.Sprintf("127.0.0.1:%d", healthPort),
		DrainAddr:   FreeAddr(t),
		QueueDir:    o.QueueDir,
		Args:        []string{"--config", filepath.Join(RepoRoot(), "config", "gateway.yaml")},
	}
	g.Env = []string{
		"MY_POD_IP=127.0.0.1",
		fmt.Sprintf("RELAY_OTLP_HTTP_PORT=%d", httpPort),
		fmt.Sprintf("RELAY_OTLP_GRPC_PORT=%d", grpcPort),
		fmt.Sprintf("RELAY_HEALTH_PORT=%d", healthPort),
		fmt.Sprintf("RELAY_PPROF_PORT=%d", pprofPort),
		fmt.Sprintf("RELAY_METRICS_PORT=%d", metricsPort),
		"RELAY_DRAIN_PORT=" + g.DrainAddr[len("127.0.0.1:"):],
		"RELAY_QUEUE_DIR=" + o.QueueDir,
		"RELAY_K8S_AUTH_TYPE=kubeConfig",
		"KUBECONFIG=" + kubeconfig,
		"RELAY_FEDERATION_SCHEME=https",
		"RELAY_FEDERATION_TARGET=" + closed,
		"RELAY_FEDERATION_TOKEN_FILE=" + token,
		"RELAY_FEDERATION_CA_FILE=" + o.Backend.CAFile,
		"OTEL_EXPORTER_DEFAULT_ENDPOINT=" + o.BackendURL,
		"OTEL_EXPORTER_DEFAULT_AUTHORIZATION=Bearer reliability-test",
		"OTEL_EXPORTER_DEFAULT_CA_FILE=" + o.Backend.CAFile,
		"OTEL_EXPORTER_DEFAULT_CERT_FILE=" + o.Backend.CertFile,
		"OTEL_EXPORTER_DEFAULT_KEY_FILE=" + o.Backend.KeyFile,
	}
	if o.Receiver == nil {
		g.Args = append(g.Args, "--config", filepath.Join(RepoRoot(), "config", "receiver-plaintext.yaml"))
	} else {
		g.HTTPURL = fmt.Sprintf("https://127.0.0.1:%d", httpPort)
		g.Env = append(g.Env,
			"RELAY_OTLP_TLS_CERT_FILE="+o.Receiver.CertFile,
			"RELAY_OTLP_TLS_KEY_FILE="+o.Receiver.KeyFile,
			"RELAY_OTLP_CLIENT_CA_FILE="+o.Receiver.ClientCAFile,
		)
	}
	g.Env = append(g.Env, o.Env...)
	if err := os.MkdirAll(filepath.Dir(o.QueueDir), 0o755); err != nil {
		t.Fatal(err)
	}
	return g
}

// Start runs the gateway and waits until it is ready and its /ready answers
// 200, as a pod becomes an endpoint of its Service.
func (g *Gateway) Start(t tb.T) *Collector {
	t.Helper()
	c := Start(t, "", Options{Env: g.Env, Args: g.Args, ReadyTimeout: 90 * time.Second})
	WaitHTTP(t, "http://"+g.DrainAddr+"/ready", http.StatusOK, 30*time.Second)
	return c
}

// Drain is the kubelet's preStop GET /drain: the status and body it answered.
func (g *Gateway) Drain(timeout time.Duration) (int, string, error) {
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get("http://" + g.DrainAddr + "/drain")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}
