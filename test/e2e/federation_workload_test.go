// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"crypto/tls"
	"fmt"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// federationToken is the bearer token the gateway reads from
// RELAY_FEDERATION_TOKEN_FILE (a ServiceAccount token in production). It must
// reach the authenticating proxy on every request and appear in no log.
const federationToken = "sa-token-for-federation-5c1e8b"

// authProxy is the authenticating proxy production puts in front of Prometheus
// (Prometheus itself accepts any bearer token): HTTPS, refuses a request without
// the expected token with 401, and forwards the others to the HTTPS Prometheus.
type authProxy struct {
	addr string

	mu      sync.Mutex
	allowed map[string]int // by path
	refused map[string]int // by path, with the Authorization header as sent (redacted)
}

func newAuthProxy(t *testing.T, serverTLS *tls.Config, upstream string, upstreamClient *http.Client) *authProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &authProxy{allowed: map[string]int{}, refused: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = upstreamClient.Transport
	l, err := tls.Listen("tcp", "127.0.0.1:0", serverTLS)
	if err != nil {
		t.Fatal(err)
	}
	p.addr = l.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := r.Header.Get("Authorization") == "Bearer "+federationToken
		p.mu.Lock()
		if ok {
			p.allowed[r.URL.Path]++
		} else {
			p.refused[r.URL.Path+" (Authorization "+redactIf(r.Header.Get("Authorization"))+")"]++
		}
		p.mu.Unlock()
		if !ok {
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

func (p *authProxy) counts() (allowed, refused map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	allowed, refused = map[string]int{}, map[string]int{}
	for k, v := range p.allowed {
		allowed[k] = v
	}
	for k, v := range p.refused {
		refused[k] = v
	}
	return allowed, refused
}

// TestFederationWorkloadThroughRealPrometheus runs config/federation.yaml,
// unchanged and with the federation StatefulSet's arguments and shard selector
// (deploy/components/federation), against a real Prometheus server serving HTTPS behind an
// authenticating proxy, and checks what reaches the default backend (mutual TLS):
// the federated series with their names, labels, values and the types
// federation_types restores, including a recording rule's series.
func TestFederationWorkloadThroughRealPrometheus(t *testing.T) {
	// One CA for the in-cluster endpoints, as the StatefulSet mounts one bundle
	// (RELAY_FEDERATION_CA_FILE): Prometheus and the proxy both serve from it.
	files := newInClusterFiles(t, federationToken)

	target := e2e.NewDemoTarget(t)
	prom := e2e.StartPrometheus(t, e2e.PrometheusOptions{
		Targets: []string{target.Addr}, Rules: e2e.DemoRules, TLS: files.prometheusTLS(),
	})
	if !strings.HasPrefix(prom.URL, "https://") {
		t.Fatalf("prometheus URL %s: want https", prom.URL)
	}
	// Plain HTTP must not be served: the token would otherwise have a clear-text path.
	if resp, err := http.Get("http://" + prom.Addr + "/-/ready"); err == nil {
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("prometheus answers plain http on %s", prom.Addr)
		}
		resp.Body.Close()
	}
	prom.WaitForQuery(t, `demo_request_duration_seconds_count`, 60*time.Second)
	prom.WaitForQuery(t, `job:demo_queue_depth:sum`, 60*time.Second)
	proxy := newAuthProxy(t, testcerts.ServerTLS(t, files.server), prom.URL, prom.Client)

	sink, gw := newFederationGateway(t, files, proxy.addr)
	// The StatefulSet's args (deploy/components/federation/statefulset.yaml), with the
	// ConfigMap's file replaced by the repository's.
	args := []string{"--config=" + gatewayConfig("federation.yaml")}
	col := e2e.Start(t, "", e2e.Options{Env: gw.Env, Args: args, ReadyTimeout: 90 * time.Second})

	want, err := target.Gather()
	if err != nil {
		t.Fatal(err)
	}
	const arrival = 3 * time.Minute

	// Counter: a monotonic cumulative Sum with the target's values and a start time.
	c := waitMetric(t, sink, "demo_requests_total", pmetric.MetricTypeSum, arrival)
	t.Logf("counter resource %v", c.resource.Attributes().AsRaw())
	if s := c.metric.Sum(); !s.IsMonotonic() || s.AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
		t.Errorf("demo_requests_total: monotonic=%v temporality=%s, want a monotonic cumulative sum", s.IsMonotonic(), s.AggregationTemporality())
	}
	if c.metric.Description() != "Requests handled by the demo target." {
		t.Errorf("demo_requests_total description %q, want the target's help", c.metric.Description())
	}
	for path, v := range map[string]float64{"/a": 42, "/b": 7} {
		dp := numberPoint(t, c.metric.Sum().DataPoints(), "path", path)
		if dp.DoubleValue() != v {
			t.Errorf("demo_requests_total{path=%s} = %v, want %v", path, dp.DoubleValue(), v)
		}
		if dp.StartTimestamp() == 0 || dp.StartTimestamp() > dp.Timestamp() {
			t.Errorf("demo_requests_total{path=%s} start %s, time %s: want a start not after the point", path, dp.StartTimestamp(), dp.Timestamp())
		}
		if got := dp.Attributes().AsRaw(); len(got) != 1 {
			t.Errorf("demo_requests_total{path=%s} attributes %v, want only path (job/instance belong to the resource)", path, got)
		}
	}
	// honor_labels keeps the target's job and instance, which the receiver turns
	// into the resource's service.name and service.instance.id.
	if got := attr(c.resource.Attributes(), "service.name"); got != "demo" {
		t.Errorf("counter resource service.name %q, want the target's job \"demo\" (honor_labels): %v", got, c.resource.Attributes().AsRaw())
	}
	if got := attr(c.resource.Attributes(), "service.instance.id"); got != target.Addr {
		t.Errorf("counter resource service.instance.id %q, want the target's instance %q (honor_labels): %v", got, target.Addr, c.resource.Attributes().AsRaw())
	}

	// Histogram: bounds, per-bucket counts, sum and count as the target has them.
	h := waitMetric(t, sink, "demo_request_duration_seconds", pmetric.MetricTypeHistogram, arrival)
	dp := histogramMatchesTarget(t, h.metric, want)
	if got := dp.Attributes().AsRaw(); len(got) != 1 || attr(dp.Attributes(), "path") != "/a" {
		t.Errorf("histogram attributes %v, want only path=/a (no le)", got)
	}
	if attr(h.resource.Attributes(), "service.name") != "demo" || attr(h.resource.Attributes(), "service.instance.id") != target.Addr {
		t.Errorf("histogram resource %v, want service.name=demo service.instance.id=%s", h.resource.Attributes().AsRaw(), target.Addr)
	}

	// Gauges stay gauges.
	g := waitMetric(t, sink, "demo_temperature_celsius", pmetric.MetricTypeGauge, arrival)
	if v := numberPoint(t, g.metric.Gauge().DataPoints(), "room", "lab").DoubleValue(); v != 21.5 {
		t.Errorf("demo_temperature_celsius{room=lab} = %v, want 21.5", v)
	}

	// The recording rule's series: a Gauge with the sum, its job kept by
	// honor_labels; it has no instance label, so the scrape supplies the
	// federation target's address.
	r := waitMetric(t, sink, "job:demo_queue_depth:sum", pmetric.MetricTypeGauge, arrival)
	t.Logf("recording rule resource %v attributes %v", r.resource.Attributes().AsRaw(), r.metric.Gauge().DataPoints().At(0).Attributes().AsRaw())
	if n := r.metric.Gauge().DataPoints().Len(); n != 1 {
		t.Fatalf("%d recording rule points, want 1", n)
	}
	if v := r.metric.Gauge().DataPoints().At(0).DoubleValue(); v != 7 {
		t.Errorf("job:demo_queue_depth:sum = %v, want 3+4", v)
	}
	if got := r.metric.Gauge().DataPoints().At(0).Attributes().AsRaw(); len(got) != 0 {
		t.Errorf("recording rule point attributes %v, want none (job is on the resource)", got)
	}
	if got := attr(r.resource.Attributes(), "service.name"); got != "demo" {
		t.Errorf("recording rule resource service.name %q, want \"demo\" (the rule keeps job): %v", got, r.resource.Attributes().AsRaw())
	}
	if got := attr(r.resource.Attributes(), "service.instance.id"); got != proxy.addr {
		t.Errorf("recording rule resource service.instance.id %q, want the federation target %q: %v", got, proxy.addr, r.resource.Attributes().AsRaw())
	}

	// Everything reached the backend over mutual TLS with the default identity.
	for _, req := range sink.Requests() {
		if req.Protocol != "http" || req.PeerCertSubject != "otelcol-relay to default" {
			t.Fatalf("backend request over %s with client certificate %q, want http and \"otelcol-relay to default\"", req.Protocol, req.PeerCertSubject)
		}
	}

	// The bearer token reached the proxy on both paths, and no request lacked it.
	allowed, refused := proxy.counts()
	t.Logf("proxy allowed %v refused %v", allowed, refused)
	for _, path := range []string{"/federate", "/api/v1/metadata"} {
		if allowed[path] == 0 {
			t.Errorf("no %s request with the bearer token reached the proxy (allowed %v)", path, allowed)
		}
	}
	if len(refused) > 0 {
		keys := make([]string, 0, len(refused))
		for k := range refused {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Errorf("the proxy refused requests without the token: %v", keys)
	}
	if strings.Contains(col.Output(), federationToken) {
		t.Error("the federation token appears in the collector's log")
	}
}

// shardEnv is the environment of pod `index` of the federation StatefulSet that
// kustomize renders from dir: every shard selector of its envFrom ConfigMap and its
// pod index.
func shardEnv(t *testing.T, dir string, index int) []string {
	t.Helper()
	r := manifest.Render(t, dir)
	for _, s := range r.StatefulSets {
		if s.Spec.Template.Labels["app.kubernetes.io/component"] != "federation" {
			continue
		}
		env := []string{fmt.Sprintf("RELAY_FEDERATION_SHARD=%d", index)}
		for _, from := range s.Spec.Template.Spec.Containers[0].EnvFrom {
			cm := r.ConfigMaps[from.ConfigMapRef.Name]
			for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
				if _, ok := manifest.ShardIndex(k); ok {
					env = append(env, k+"="+cm.Data[k])
				}
			}
		}
		return env
	}
	t.Fatalf("%s renders no federation StatefulSet", dir)
	return nil
}
