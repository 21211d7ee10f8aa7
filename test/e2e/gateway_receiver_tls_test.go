// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// TestGatewayReceiversRequireClientCertificates runs config/gateway.yaml alone,
// with nothing merged, as the receivers' only config: OTLP over plaintext and TLS
// without a client certificate are refused on both protocols; a client with a
// certificate from the bundle gets through to the backend.
func TestGatewayReceiversRequireClientCertificates(t *testing.T) {
	backend := e2e.NewBackendTLS(t, "default")
	sink := e2e.NewSink(t, otlpfixture.SinkOptions{TLS: backend.Server})
	rcv := e2e.NewReceiverTLS(t)
	gw := e2e.NewGateway(t, e2e.GatewayOptions{BackendURL: "https://" + sink.HTTPAddr, Backend: backend, Receiver: rcv})
	args := []string{"--config", gatewayConfig("gateway.yaml")}
	e2e.Start(t, "", e2e.Options{Env: gw.Env, Args: args, ReadyTimeout: 90 * time.Second})
	hostPort := strings.TrimPrefix(gw.HTTPURL, "https://")

	noCert := rcv.Client.Clone()
	noCert.Certificates = nil
	for _, tc := range []struct {
		name string
		url  string
		tls  *tls.Config
	}{
		{"http plaintext", "http://" + hostPort, nil},
		{"http TLS without a client certificate", "https://" + hostPort, noCert},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := e2e.NewHTTPClient(tc.url, tc.tls).SendLogs(ctx, otlpfixture.FluentBitLogs(1, 0), otlpfixture.Encoding{})
		cancel()
		if err == nil {
			t.Errorf("%s: accepted; gateway.yaml alone must require TLS with a client certificate", tc.name)
		} else {
			t.Logf("%s: refused: %v", tc.name, err)
		}
	}
	for _, tc := range []struct {
		name string
		tls  *tls.Config
	}{
		{"grpc plaintext", nil},
		{"grpc TLS without a client certificate", noCert},
	} {
		cc, err := e2e.DialGRPC(gw.GRPCAddr, tc.tls)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = otlpfixture.SendLogsGRPC(ctx, cc, otlpfixture.FluentBitLogs(1, 0))
		cancel()
		cc.Close()
		if err == nil {
			t.Errorf("%s: accepted; gateway.yaml alone must require TLS with a client certificate", tc.name)
		} else {
			t.Logf("%s: refused: %v", tc.name, err)
		}
	}
	if n := sink.LogRecordCount(); n != 0 {
		t.Errorf("%d records from refused clients reached the backend", n)
	}

	// The client fluent-bit is: TLS with its certificate.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e2e.NewHTTPClient(gw.HTTPURL, rcv.Client).SendLogs(ctx, otlpfixture.FluentBitLogs(10, 0), otlpfixture.Encoding{}); err != nil {
		t.Fatalf("http with a client certificate: %v", err)
	}
	cc, err := e2e.DialGRPC(gw.GRPCAddr, rcv.Client)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if err := otlpfixture.SendLogsGRPC(ctx, cc, otlpfixture.FluentBitLogs(10, 10)); err != nil {
		t.Fatalf("grpc with a client certificate: %v", err)
	}
	sink.WaitForLogRecords(t, 20, time.Minute)
}

// TestDeployNeverMergesPlaintextReceivers: the plaintext opt-in is for tests and
// local runs; no manifest passes it to a collector.
func TestDeployNeverMergesPlaintextReceivers(t *testing.T) {
	for _, o := range append([]string{"../base", "../agent"}, manifest.Overlays()...) {
		r := manifest.Render(t, manifest.Dir("overlays", o))
		var containers []corev1.Container
		for _, s := range r.StatefulSets {
			containers = append(containers, s.Spec.Template.Spec.Containers...)
		}
		for _, d := range r.DaemonSets {
			containers = append(containers, d.Spec.Template.Spec.Containers...)
		}
		for _, c := range containers {
			for _, a := range append(append([]string(nil), c.Command...), c.Args...) {
				if strings.Contains(a, "plaintext") {
					t.Errorf("%s: container %s runs with %q: receivers must use TLS in a cluster", o, c.Name, a)
				}
			}
		}
	}
}
