// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

// The metadata endpoint down, failing or empty: what passes through and when it is
// asked again.

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func TestMetadataDownPassesThroughUnchanged(t *testing.T) {
	srv := newMetadataServer(t, demoMetadata)
	url := srv.URL
	srv.Close() // a port where nothing listens any more
	p := newTestProcessor(t, url, nil)

	s := newScrape(t0)
	s.add("demo_requests_total", 42)
	s.histogram([]string{"+Inf"}, []float64{1}, 1, 1)
	before := protoBytes(t, s.md)
	out := p.process(t, s.md)
	if !bytes.Equal(before, protoBytes(t, out)) {
		t.Fatalf("metrics changed without metadata: %v", names(out))
	}
	warns := p.logs.FilterMessageSnippet("Metric metadata unavailable").All()
	if len(warns) != 1 {
		t.Fatalf("%d warnings after one failed refresh, want exactly 1", len(warns))
	}
	if err := warns[0].ContextMap()["error"]; err == nil {
		t.Error("warning does not carry the error")
	}
	p.clock = p.clock.Add(90 * time.Second)
	age, err := p.tel.GetMetric(metricMetadataAge)
	if err != nil {
		t.Fatal(err)
	}
	if got := age.Data.(metricdata.Gauge[float64]).DataPoints[0].Value; got != 90 {
		t.Errorf("metadata age %v, want 90 (since start, nothing fetched)", got)
	}
	fails, err := p.tel.GetMetric(metricRefreshFailures)
	if err != nil {
		t.Fatal(err)
	}
	if got := fails.Data.(metricdata.Sum[int64]).DataPoints[0].Value; got != 1 {
		t.Errorf("refresh failures %d, want 1", got)
	}
}

// After a good read, an outage keeps the known types instead of flipping every
// family back to gauges, and each failed refresh logs once.
func TestOutageKeepsLastGoodMetadata(t *testing.T) {
	srv := newMetadataServer(t, demoMetadata)
	p := newTestProcessor(t, srv.URL, nil)
	srv.set(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "upstream down", http.StatusBadGateway) })
	p.refresh(context.Background(), time.Hour)
	p.refresh(context.Background(), time.Hour)
	if n := len(p.logs.FilterMessageSnippet("refresh failed").All()); n != 2 {
		t.Errorf("%d warnings for 2 failed refreshes, want 2", n)
	}
	s := newScrape(t0)
	s.add("demo_requests_total", 42)
	mustMetric(t, p.process(t, s.md), "demo_requests_total", pmetric.MetricTypeSum)
}

// A Prometheus that cannot be read when the collector starts, or has no metadata yet
// (it has not scraped anything), is asked again within seconds, not after
// refresh_interval: until then every federated series leaves as a gauge. Both seen on
// a real cluster, where the federation pod sent gauges for the whole 5 minutes.
func TestFailedFirstReadIsRetriedSoon(t *testing.T) {
	for name, first := range map[string]http.HandlerFunc{
		"unreachable": func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "starting", http.StatusServiceUnavailable)
		},
		"no metadata yet": jsonMetadata(map[string][]metadataEntry{}),
	} {
		t.Run(name, func(t *testing.T) { testFirstReadRetried(t, first) })
	}
}

func testFirstReadRetried(t *testing.T, first http.HandlerFunc) {
	srv := newMetadataServer(t, demoMetadata)
	srv.set(first)
	cfg := createDefaultConfig()
	cfg.Endpoint = srv.URL
	cfg.RefreshInterval = time.Hour
	p, err := newFederationTypes(cfg, componenttest.NewNopTelemetrySettings())
	if err != nil {
		t.Fatal(err)
	}
	p.firstRetry = 10 * time.Millisecond
	if err := p.start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.shutdown(context.Background()) })
	loaded := func() bool { m := p.meta.Load(); return m != nil && len(m.families) > 0 }
	if loaded() {
		t.Fatal("metadata read from a server that has none")
	}
	srv.set(jsonMetadata(demoMetadata))
	hits := func() int { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.hits }
	for deadline := time.Now().Add(10 * time.Second); !loaded(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no metadata 10 s after Prometheus answered again (refresh_interval 1h, %d requests)", hits())
		}
	}
	// Once read, the retries stop: the next read is refresh_interval away.
	n := hits()
	time.Sleep(300 * time.Millisecond)
	if hits() != n {
		t.Errorf("%d more requests after metadata was read: still retrying", hits()-n)
	}
}
