// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/podrefs"
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
	sink := e2e.NewSink(t, otlpfixture.SinkOptions{TLS: testcerts.ServerTLS(t, ca.Server(t, testcerts.Options{}))})
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
	if err := e2e.NewHTTPClient(gw.HTTPURL, nil).SendLogs(ctx, otlpfixture.FluentBitLogs(100, 0), otlpfixture.Encoding{}); err != nil {
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

// TestDeployBackendDefaultMTLS: neither the relay (base/) nor federation
// (components/federation) mounts a file for the default backend (it is
// header-only), and components/backend-default-mtls, listed after federation,
// points certwatch/default of both at the CA from ConfigMap
// otelcol-relay-backend-default and the keypair from Secret
// otelcol-relay-backend-default-tls, mounted as one whole directory.
func TestDeployBackendDefaultMTLS(t *testing.T) {
	workload := func(r manifest.Rendered, name string) (corev1.PodSpec, map[string]string) {
		for _, s := range r.StatefulSets {
			if s.Name == name {
				env := map[string]string{}
				for _, e := range s.Spec.Template.Spec.Containers[0].Env {
					env[e.Name] = e.Value
				}
				return s.Spec.Template.Spec, env
			}
		}
		t.Fatalf("no StatefulSet %s", name)
		return corev1.PodSpec{}, nil
	}
	headerOnly, mtls := manifest.Render(t, manifest.FederationOverlay(t)), manifest.Render(t, manifest.FederationOverlay(t, "backend-default-mtls"))
	for _, name := range []string{"otelcol-relay", "otelcol-relay-federation"} {
		spec, env := workload(headerOnly, name)
		for _, v := range []string{"OTEL_EXPORTER_DEFAULT_CA_FILE", "OTEL_EXPORTER_DEFAULT_CERT_FILE", "OTEL_EXPORTER_DEFAULT_KEY_FILE"} {
			if _, ok := env[v]; ok {
				t.Errorf("%s sets %s: the default backend would need a file", name, v)
			}
		}
		for _, ref := range podrefs.Of(name, spec) {
			if ref.Name == "otelcol-relay-backend-default-tls" {
				t.Errorf("%s reads Secret %s: a header-only backend has no client certificate", name, ref.Name)
			}
			if ref.Name == "otelcol-relay-backend-default" && (len(ref.Keys) != 1 || ref.Keys[0] != "endpoint") {
				t.Errorf("%s reads keys %v of ConfigMap %s, want only endpoint", name, ref.Keys, ref.Name)
			}
		}

		spec, env = workload(mtls, name)
		c := spec.Containers[0]
		for v, want := range map[string][2]string{
			"OTEL_EXPORTER_DEFAULT_CA_FILE":   {"configMap", "otelcol-relay-backend-default"},
			"OTEL_EXPORTER_DEFAULT_CERT_FILE": {"secret", "otelcol-relay-backend-default-tls"},
			"OTEL_EXPORTER_DEFAULT_KEY_FILE":  {"secret", "otelcol-relay-backend-default-tls"},
		} {
			if env[v] == "" {
				t.Errorf("%s with backend-default-mtls: %s is not set", name, v)
				continue
			}
			vol, p := manifest.MountedVolume(t, spec, c, env[v])
			if got := manifest.ProjectedFrom(vol, p); got != want {
				t.Errorf("%s: %s=%s comes from %v, want %v", name, v, env[v], got, want)
			}
		}
	}
}
