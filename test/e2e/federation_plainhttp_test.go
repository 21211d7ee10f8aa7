// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// TestFederationPlainHTTPThroughRealPrometheus: with deploy/components/federation-plain-http,
// config/federation.yaml federates a real Prometheus that serves plain http (as
// kube-prometheus-stack's does in a cluster), with the variables that component
// sets: the series reach the backend with the types federation_types restores, and
// neither /federate nor /api/v1/metadata gets an Authorization header, not even an
// empty one. Setting the scheme alone is refused at startup, naming the token file
// that would travel in clear text.
func TestFederationPlainHTTPThroughRealPrometheus(t *testing.T) {
	// What the component sets, as kustomize renders it.
	var plain []string
	for _, e := range manifest.Render(t, manifest.FederationOverlay(t, "federation-plain-http")).StatefulSetOf(t, "federation").Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom == nil && strings.HasPrefix(e.Name, "RELAY_FEDERATION_") {
			plain = append(plain, e.Name+"="+e.Value)
		}
	}
	t.Logf("the component's environment: %v", plain)

	target := e2e.NewDemoTarget(t)
	prom := e2e.StartPrometheus(t, e2e.PrometheusOptions{Targets: []string{target.Addr}})
	if !strings.HasPrefix(prom.URL, "http://") {
		t.Fatalf("prometheus URL %s: want plain http", prom.URL)
	}
	prom.WaitForQuery(t, `demo_request_duration_seconds_count`, 60*time.Second)

	// A recording hop in front of it: which paths were asked for, and with what
	// Authorization header.
	u, err := url.Parse(prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	paths, auth := map[string]int{}, map[string]int{}
	rp := httputil.NewSingleHostReverseProxy(u)
	hop := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths[r.URL.Path]++
		if _, ok := r.Header["Authorization"]; ok {
			auth[r.URL.Path]++
		}
		mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hopAddr := l.Addr().String()
	go func() { _ = hop.Serve(l) }()
	t.Cleanup(func() { _ = hop.Close() })

	backend := e2e.NewBackendTLS(t, "default")
	sink := e2e.NewSink(t, otlpfixture.SinkOptions{TLS: backend.Server})
	gw := e2e.NewGateway(t, e2e.GatewayOptions{
		BackendURL: "https://" + sink.HTTPAddr,
		Backend:    backend,
		Env:        append(append(shardEnv(t, manifest.FederationOverlay(t), 0), plain...), "RELAY_FEDERATION_TARGET="+hopAddr),
	})
	args := []string{"--config=" + gatewayConfig("federation.yaml")}

	// The scheme alone, with the token file the StatefulSet mounts: refused.
	out, code := e2e.Run(t, time.Minute, append(append([]string{}, gw.Env...),
		"RELAY_FEDERATION_SCHEME=http", "RELAY_FEDERATION_TOKEN_FILE=/var/run/secrets/otelcol-relay/federation/token"),
		append([]string{"validate"}, args...)...)
	if code == 0 || !strings.Contains(out, "bearer_token_file") || !strings.Contains(out, "clear text") {
		t.Errorf("validate with RELAY_FEDERATION_SCHEME=http and the token file: exit %d, want a refusal naming bearer_token_file:\n%s", code, out)
	}

	e2e.Start(t, "", e2e.Options{Env: gw.Env, Args: args, ReadyTimeout: 90 * time.Second})
	c := waitMetric(t, sink, "demo_requests_total", pmetric.MetricTypeSum, 3*time.Minute)
	if c.metric.Description() != "Requests handled by the demo target." {
		t.Errorf("demo_requests_total description %q, want the target's help (federation_types read the metadata)", c.metric.Description())
	}
	waitMetric(t, sink, "demo_request_duration_seconds", pmetric.MetricTypeHistogram, time.Minute)

	mu.Lock()
	defer mu.Unlock()
	t.Logf("requests through the plain hop %v, with an Authorization header %v", paths, auth)
	for _, p := range []string{"/federate", "/api/v1/metadata"} {
		if paths[p] == 0 {
			t.Errorf("no %s request reached the plain-http Prometheus", p)
		}
	}
	if len(auth) > 0 {
		t.Errorf("requests over plain http carried an Authorization header: %v", auth)
	}
}
