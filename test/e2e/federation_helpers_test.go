// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

// Helpers the federation tests share: the files the federation StatefulSet
// mounts, and its gateway on shard 0 of deploy/components/federation.

import (
	"path/filepath"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// inClusterFiles are one CA bundle for the in-cluster endpoints, as the
// StatefulSet mounts one (RELAY_FEDERATION_CA_FILE), a server key pair from
// that CA for Prometheus (and a proxy) to serve, and the bearer token file.
// HTTPS, as federation refuses to send its token in clear text.
type inClusterFiles struct {
	server                               *testcerts.KeyPair
	caFile, certFile, keyFile, tokenFile string
}

func newInClusterFiles(t *testing.T, token string) inClusterFiles {
	t.Helper()
	ca := testcerts.NewCA(t, "in-cluster CA")
	dir := t.TempDir()
	f := inClusterFiles{
		server: ca.Server(t, testcerts.Options{}),
		caFile: filepath.Join(dir, "ca.crt"), certFile: filepath.Join(dir, "tls.crt"),
		keyFile: filepath.Join(dir, "tls.key"), tokenFile: filepath.Join(dir, "token"),
	}
	testcerts.WriteFile(t, f.caFile, ca.CertPEM)
	testcerts.WriteFile(t, f.certFile, f.server.CertPEM)
	testcerts.WriteFile(t, f.keyFile, f.server.KeyPEM)
	testcerts.WriteFile(t, f.tokenFile, []byte(token+"\n"))
	return f
}

// prometheusTLS makes Prometheus serve HTTPS with the server key pair.
func (f inClusterFiles) prometheusTLS() *e2e.PrometheusTLS {
	return &e2e.PrometheusTLS{CertFile: f.certFile, KeyFile: f.keyFile, CAFile: f.caFile}
}

// federationEnv is the StatefulSet's environment to federate from target over
// HTTPS with the token.
func (f inClusterFiles) federationEnv(target string) []string {
	return []string{
		"RELAY_FEDERATION_SCHEME=https",
		"RELAY_FEDERATION_TARGET=" + target,
		"RELAY_FEDERATION_TOKEN_FILE=" + f.tokenFile,
		"RELAY_FEDERATION_CA_FILE=" + f.caFile,
	}
}

// newFederationGateway is the federation StatefulSet's environment (deploy/components/federation,
// shard 0) federating from target, exporting with mutual TLS to a TLS sink;
// env comes last and so wins.
func newFederationGateway(t *testing.T, f inClusterFiles, target string, env ...string) (*otlpfixture.Sink, *e2e.Gateway) {
	t.Helper()
	backend := e2e.NewBackendTLS(t, "default")
	sink := e2e.NewSink(t, otlpfixture.SinkOptions{TLS: backend.Server})
	gw := e2e.NewGateway(t, e2e.GatewayOptions{
		BackendURL: "https://" + sink.HTTPAddr,
		Backend:    backend,
		Receiver:   e2e.NewReceiverTLS(t),
		Env:        append(append(shardEnv(t, manifest.FederationOverlay(t), 0), f.federationEnv(target)...), env...),
	})
	return sink, gw
}
