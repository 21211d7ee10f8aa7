// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-relay/otelcol-relay/components/federationtypesprocessor/internal/metadata"
)

// demoMetadata is what Prometheus 2.42 answers on /api/v1/metadata for the
// e2e demo target (taken from a real server).
var demoMetadata = map[string][]metadataEntry{
	"demo_requests_total":           {{Type: "counter", Help: "Requests handled by the demo target."}},
	"demo_temperature_celsius":      {{Type: "gauge", Help: "Temperature of the demo room."}},
	"demo_request_duration_seconds": {{Type: "histogram", Help: "Duration of demo requests."}},
	"demo_response_size_bytes":      {{Type: "summary", Help: "Size of demo responses."}},
	"demo_queue_depth":              {{Type: "gauge", Help: "Items waiting in a demo queue."}},
	// Two jobs disagree about this one.
	"shared_name": {{Type: "counter", Help: "a"}, {Type: "gauge", Help: "b"}},
}

// metadataServer is a real HTTP server that answers like Prometheus's metadata
// API; handler may be swapped while the test runs.
type metadataServer struct {
	*httptest.Server
	mu      sync.Mutex
	handler http.HandlerFunc
	hits    int
}

func newMetadataServer(t *testing.T, data map[string][]metadataEntry) *metadataServer {
	t.Helper()
	s := &metadataServer{}
	s.set(jsonMetadata(data))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		h := s.handler
		s.hits++
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *metadataServer) set(h http.HandlerFunc) {
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

func jsonMetadata(data map[string][]metadataEntry) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != defaultMetadataPath {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
	}
}

type testProcessor struct {
	*federationTypes
	tel   *componenttest.Telemetry
	logs  *observer.ObservedLogs
	clock time.Time
}

// newDemoProcessor is a started processor whose metadata server answers
// demoMetadata.
func newDemoProcessor(t *testing.T) *testProcessor {
	t.Helper()
	return newTestProcessor(t, newMetadataServer(t, demoMetadata).URL, nil)
}

// newTestProcessor builds the processor against endpoint and starts it, so the
// first metadata read has happened when it returns.
func newTestProcessor(t *testing.T, endpoint string, mod func(*Config)) *testProcessor {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.Endpoint = endpoint
	cfg.RefreshInterval = time.Hour // tests call refresh themselves
	if mod != nil {
		mod(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config invalid: %v", err)
	}
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	core, logs := observer.New(zapcore.DebugLevel)
	set := tel.NewTelemetrySettings()
	set.Logger = zap.New(core)
	p, err := newFederationTypes(cfg, set)
	if err != nil {
		t.Fatal(err)
	}
	tp := &testProcessor{federationTypes: p, tel: tel, logs: logs, clock: time.Unix(1_700_000_000, 0)}
	p.now = func() time.Time { return tp.clock }
	p.started = tp.clock
	p.firstRetry = time.Hour // tests call refresh themselves, also after a failed first read
	if err := p.start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.shutdown(context.Background()) })
	return tp
}

func (tp *testProcessor) process(t *testing.T, md pmetric.Metrics) pmetric.Metrics {
	t.Helper()
	out, err := tp.processMetrics(context.Background(), md)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newFactoryProcessor goes through the factory, as the collector does.
func newFactoryProcessor(t *testing.T, endpoint string) (processor.Metrics, *consumertest.MetricsSink) {
	t.Helper()
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Endpoint = endpoint
	sink := new(consumertest.MetricsSink)
	p, err := NewFactory().CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p, sink
}

// scrape builds metrics shaped like the prometheus receiver's output for a
// federation scrape: one resource per original job/instance, the receiver's
// scope, and every series a Gauge of doubles.
type scrape struct {
	md     pmetric.Metrics
	ts     pcommon.Timestamp
	gauges gauges
}

// gauges appends gauge points to a scope, one metric a name, the way the
// prometheus receiver turns untyped federated series into pdata.
type gauges struct {
	sm     pmetric.ScopeMetrics
	byName map[string]pmetric.Metric
}

func newGauges(sm pmetric.ScopeMetrics) gauges {
	return gauges{sm: sm, byName: map[string]pmetric.Metric{}}
}

// point appends a point to name's gauge, adding the gauge on first use.
func (g gauges) point(name string) pmetric.NumberDataPoint {
	m, ok := g.byName[name]
	if !ok {
		m = g.sm.Metrics().AppendEmpty()
		m.SetName(name)
		m.SetEmptyGauge()
		g.byName[name] = m
	}
	return m.Gauge().DataPoints().AppendEmpty()
}

func newScrape(ts time.Time) *scrape {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	a := rm.Resource().Attributes()
	a.PutStr("service.name", "demo")
	a.PutStr("service.instance.id", "127.0.0.1:9100")
	a.PutStr("server.address", "127.0.0.1")
	a.PutStr("server.port", "9100")
	a.PutStr("url.scheme", "http")
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver")
	sm.Scope().SetVersion("0.165.1")
	return &scrape{md: md, ts: pcommon.NewTimestampFromTime(ts), gauges: newGauges(sm)}
}

// add appends a gauge point; kv are attribute pairs.
func (s *scrape) add(name string, v float64, kv ...string) pmetric.NumberDataPoint {
	dp := s.gauges.point(name)
	dp.SetTimestamp(s.ts)
	dp.SetDoubleValue(v)
	for i := 0; i+1 < len(kv); i += 2 {
		dp.Attributes().PutStr(kv[i], kv[i+1])
	}
	return dp
}

// histogram adds the series of demo_request_duration_seconds as federation
// delivers them: cumulative buckets, _sum and _count.
func (s *scrape) histogram(les []string, cums []float64, sum, count float64, kv ...string) {
	const name = "demo_request_duration_seconds"
	for i, le := range les {
		s.add(name+"_bucket", cums[i], append([]string{"le", le}, kv...)...)
	}
	s.add(name+"_sum", sum, kv...)
	s.add(name+"_count", count, kv...)
}

func metricsByName(md pmetric.Metrics) map[string]pmetric.Metric {
	out := map[string]pmetric.Metric{}
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				out[ms.At(k).Name()] = ms.At(k)
			}
		}
	}
	return out
}

func mustMetric(t *testing.T, md pmetric.Metrics, name string, typ pmetric.MetricType) pmetric.Metric {
	t.Helper()
	m, ok := metricsByName(md)[name]
	if !ok {
		t.Fatalf("no metric %q in output; have %v", name, names(md))
	}
	if m.Type() != typ {
		t.Fatalf("metric %q is a %s, want %s", name, m.Type(), typ)
	}
	return m
}

func names(md pmetric.Metrics) []string {
	var out []string
	for n, m := range metricsByName(md) {
		out = append(out, n+":"+m.Type().String())
	}
	return out
}

func protoBytes(t *testing.T, md pmetric.Metrics) []byte {
	t.Helper()
	b, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
