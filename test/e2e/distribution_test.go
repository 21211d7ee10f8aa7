// SPDX-License-Identifier: Apache-2.0

package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/promtext"
)

// relay is one collector started on free ports and exporting to a sink.
type relay struct {
	*e2e.Collector
	sink        *e2e.Sink
	grpcAddr    string
	httpURL     string
	healthURL   string
	metricsURL  string
	grpcMetrics string
}

// passThroughConfig is the smallest production-shaped pipeline: the gateway's
// receivers in (otlp for gRPC, otlp_http_pooled for OTLP/HTTP), memory_limiter
// and batch, otlp_grpc out to the sink.
const passThroughConfig = `
extensions:
  health_check:
    endpoint: ${env:T_HEALTH}
receivers:
  otlp:
    protocols:
      grpc: {endpoint: "${env:T_GRPC}"}
  otlp_http_pooled: {endpoint: "${env:T_HTTP}"}
processors:
  memory_limiter: {check_interval: 1s, limit_percentage: 80, spike_limit_percentage: 20}
  batch: {timeout: 200ms, send_batch_size: 2000, send_batch_max_size: 2000}
exporters:
  # A plaintext hop to the in-test sink: the name makes that choice visible, as
  # the distribution's startup checks require.
  otlp_grpc/plaintext-sink:
    endpoint: ${env:T_SINK}
    tls: {insecure: true}
    sending_queue: {enabled: true, queue_size: 100000, sizer: items}
    retry_on_failure: {enabled: true, max_elapsed_time: 0}
service:
  extensions: [health_check]
  telemetry:
    metrics:
      level: normal
      readers:
        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: "${env:T_METRICS_PORT}"}}}
  pipelines:
    logs: {receivers: [otlp, otlp_http_pooled], processors: [memory_limiter, batch], exporters: [otlp_grpc/plaintext-sink]}
    metrics: {receivers: [otlp, otlp_http_pooled], processors: [memory_limiter, batch], exporters: [otlp_grpc/plaintext-sink]}
`

func startRelay(t *testing.T) *relay {
	t.Helper()
	sink := e2e.NewSink(t, e2e.SinkOptions{})
	r := &relay{sink: sink, grpcAddr: e2e.FreeAddr(t)}
	httpAddr, healthAddr, metricsPort := e2e.FreeAddr(t), e2e.FreeAddr(t), e2e.FreePort(t)
	r.httpURL = "http://" + httpAddr
	r.healthURL = "http://" + healthAddr + "/"
	r.metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	r.Collector = e2e.Start(t, passThroughConfig, e2e.Options{Env: []string{
		"T_GRPC=" + r.grpcAddr, "T_HTTP=" + httpAddr, "T_HEALTH=" + healthAddr,
		"T_SINK=" + sink.GRPCAddr, "T_METRICS_PORT=" + strconv.Itoa(metricsPort),
	}})
	return r
}

// dialGRPC connects to the relay's OTLP gRPC receiver until the test ends.
func (r *relay) dialGRPC(t *testing.T) *grpc.ClientConn {
	t.Helper()
	cc, err := e2e.DialGRPC(r.grpcAddr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func TestComponentsListsEveryComponent(t *testing.T) {
	out, code := e2e.Run(t, time.Minute, nil, "components")
	if code != 0 {
		t.Fatalf("components exited %d:\n%s", code, out)
	}
	for _, name := range []string{
		"otlp", "prometheus", "kubelet_stats",
		"memory_limiter", "batch", "k8s_attributes",
		"otlp_grpc", "otlp_http", "debug",
		"health_check", "file_storage", "pprof", "certwatch",
		"federation_types", "groupbyattrs", "gomemlimit", "admission", "queue_storage",
		"pod_identity", "attributes_to_resource", "otlp_http_pooled",
	} {
		if !regexp.MustCompile(`(?m)^\s*- name: ` + regexp.QuoteMeta(name) + `\s*$`).MatchString(out) {
			t.Errorf("components does not list %q", name)
		}
	}
	for _, scheme := range []string{"env", "file", "yaml"} {
		if !regexp.MustCompile(`(?m)^\s*- scheme: ` + scheme + `\s*$`).MatchString(out) {
			t.Errorf("components does not list the %q provider", scheme)
		}
	}
	if t.Failed() {
		t.Logf("components output:\n%s", out)
	}
}

func TestVersionIsStampedAtBuild(t *testing.T) {
	out, code := e2e.Run(t, time.Minute, nil, "--version")
	if code != 0 {
		t.Fatalf("--version exited %d: %s", code, out)
	}
	if !strings.HasPrefix(out, "otelcol-relay version ") {
		t.Fatalf("--version printed %q", out)
	}
	if strings.Contains(out, "0.0.0-dev") {
		t.Fatalf("--version printed the unstamped default %q: the build did not set -X main.version", out)
	}
}

// sameRecord compares everything a relay must carry unchanged.
func sameRecord(t *testing.T, seq int64, want, got plog.LogRecord, wantRes, gotRes pcommon.Resource) {
	t.Helper()
	if g, w := got.Body().AsRaw(), want.Body().AsRaw(); fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("seq %d: body %v, want %v", seq, g, w)
	}
	if g, w := got.Attributes().AsRaw(), want.Attributes().AsRaw(); fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("seq %d: attributes %v, want %v", seq, g, w)
	}
	if g, w := gotRes.Attributes().AsRaw(), wantRes.Attributes().AsRaw(); fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("seq %d: resource %v, want %v", seq, g, w)
	}
	if got.SeverityNumber() != want.SeverityNumber() || got.SeverityText() != want.SeverityText() {
		t.Errorf("seq %d: severity %v/%q, want %v/%q", seq, got.SeverityNumber(), got.SeverityText(), want.SeverityNumber(), want.SeverityText())
	}
	if got.Timestamp() != want.Timestamp() || got.ObservedTimestamp() != want.ObservedTimestamp() {
		t.Errorf("seq %d: timestamps %v/%v, want %v/%v", seq, got.Timestamp(), got.ObservedTimestamp(), want.Timestamp(), want.ObservedTimestamp())
	}
}

// recordsBySeq indexes every received log record (with its resource) by SeqAttr.
func recordsBySeq(lds []plog.Logs) map[int64][]struct {
	lr  plog.LogRecord
	res pcommon.Resource
} {
	out := map[int64][]struct {
		lr  plog.LogRecord
		res pcommon.Resource
	}{}
	for _, ld := range lds {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			for j := 0; j < rl.ScopeLogs().Len(); j++ {
				lrs := rl.ScopeLogs().At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					if v, ok := lrs.At(k).Attributes().Get(e2e.SeqAttr); ok {
						out[v.Int()] = append(out[v.Int()], struct {
							lr  plog.LogRecord
							res pcommon.Resource
						}{lrs.At(k), rl.Resource()})
					}
				}
			}
		}
	}
	return out
}

func TestLogsArriveUnchanged(t *testing.T) {
	r := startRelay(t)
	ctx := context.Background()
	cc := r.dialGRPC(t)
	client := e2e.NewHTTPClient(r.httpURL, nil)

	const perVariant = 250
	type variant struct {
		name string
		send func(plog.Logs) error
	}
	variants := []variant{
		{"grpc", func(ld plog.Logs) error { return e2e.SendLogsGRPC(ctx, cc, ld) }},
		{"http-protobuf", func(ld plog.Logs) error { return client.SendLogs(ctx, ld, e2e.Encoding{}) }},
		{"http-protobuf-gzip", func(ld plog.Logs) error { return client.SendLogs(ctx, ld, e2e.Encoding{Gzip: true}) }},
		{"http-json", func(ld plog.Logs) error { return client.SendLogs(ctx, ld, e2e.Encoding{JSON: true}) }},
		{"http-json-gzip", func(ld plog.Logs) error { return client.SendLogs(ctx, ld, e2e.Encoding{JSON: true, Gzip: true}) }},
	}
	sent := map[int64]plog.Logs{}
	for i, v := range variants {
		first := int64(i * perVariant)
		ld := e2e.FluentBitLogs(perVariant, first)
		// Tag each variant so a mix-up between them would show.
		ld.ResourceLogs().At(0).Resource().Attributes().PutStr("test.variant", v.name)
		if err := v.send(ld); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		for s := first; s < first+perVariant; s++ {
			sent[s] = ld
		}
	}
	total := perVariant * len(variants)
	r.sink.WaitForLogRecords(t, total, time.Minute)
	time.Sleep(500 * time.Millisecond) // anything extra would be a duplicate
	if n := r.sink.LogRecordCount(); n != total {
		t.Fatalf("sink got %d records, want exactly %d", n, total)
	}
	got := recordsBySeq(r.sink.Logs())
	for seq, ld := range sent {
		recs := got[seq]
		if len(recs) != 1 {
			t.Fatalf("seq %d arrived %d times", seq, len(recs))
		}
		idx := int(seq % perVariant)
		want := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(idx)
		sameRecord(t, seq, want, recs[0].lr, ld.ResourceLogs().At(0).Resource(), recs[0].res)
	}
}

func testMetrics(variant string) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "checkout")
	rm.Resource().Attributes().PutStr("test.variant", variant)
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	ts := pcommon.NewTimestampFromTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	start := pcommon.NewTimestampFromTime(time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC))

	g := ms.AppendEmpty()
	g.SetName("queue_depth")
	g.SetUnit("{item}")
	dp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(ts)
	dp.SetDoubleValue(42.5)
	dp.Attributes().PutStr("queue", "audit")

	s := ms.AppendEmpty()
	s.SetName("requests_total")
	sum := s.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	sdp := sum.DataPoints().AppendEmpty()
	sdp.SetStartTimestamp(start)
	sdp.SetTimestamp(ts)
	sdp.SetIntValue(1234)

	h := ms.AppendEmpty()
	h.SetName("latency_seconds")
	hist := h.SetEmptyHistogram()
	hist.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hdp := hist.DataPoints().AppendEmpty()
	hdp.SetStartTimestamp(start)
	hdp.SetTimestamp(ts)
	hdp.SetCount(10)
	hdp.SetSum(2.5)
	hdp.ExplicitBounds().FromRaw([]float64{0.1, 0.5, 1})
	hdp.BucketCounts().FromRaw([]uint64{4, 3, 2, 1})
	return md
}

func TestMetricsArriveUnchanged(t *testing.T) {
	r := startRelay(t)
	ctx := context.Background()
	cc := r.dialGRPC(t)
	if _, err := pmetricotlp.NewGRPCClient(cc).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(testMetrics("grpc"))); err != nil {
		t.Fatal(err)
	}
	client := e2e.NewHTTPClient(r.httpURL, nil)
	for _, v := range []struct {
		name string
		json bool
	}{{"http-protobuf", false}, {"http-json", true}} {
		req := pmetricotlp.NewExportRequestFromMetrics(testMetrics(v.name))
		var body []byte
		var err error
		ct := "application/x-protobuf"
		if v.json {
			body, err = req.MarshalJSON()
			ct = "application/json"
		} else {
			body, err = req.MarshalProto()
		}
		if err != nil {
			t.Fatal(err)
		}
		code, resp, err := client.Post(ctx, "/v1/metrics", body, ct, "")
		if err != nil || code != http.StatusOK {
			t.Fatalf("%s: %d %s %v", v.name, code, resp, err)
		}
	}
	r.sink.WaitForDataPoints(t, 9, time.Minute)

	want := testMetrics("")
	wantMs := want.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	seen := map[string]int{}
	for _, md := range r.sink.Metrics() {
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			rm := md.ResourceMetrics().At(i)
			variant, _ := rm.Resource().Attributes().Get("test.variant")
			ms := rm.ScopeMetrics().At(0).Metrics()
			for j := 0; j < ms.Len(); j++ {
				m := ms.At(j)
				seen[variant.Str()+"/"+m.Name()]++
				for k := 0; k < wantMs.Len(); k++ {
					w := wantMs.At(k)
					if w.Name() != m.Name() {
						continue
					}
					if m.Type() != w.Type() || m.Unit() != w.Unit() {
						t.Errorf("%s %s: type %v unit %q, want %v %q", variant.Str(), m.Name(), m.Type(), m.Unit(), w.Type(), w.Unit())
					}
					// Data points compared through their JSON form: values,
					// timestamps, attributes, bounds and bucket counts at once.
					gotJSON, _ := (&pmetric.JSONMarshaler{}).MarshalMetrics(single(m))
					wantJSON, _ := (&pmetric.JSONMarshaler{}).MarshalMetrics(single(w))
					if string(gotJSON) != string(wantJSON) {
						t.Errorf("%s %s:\n got %s\nwant %s", variant.Str(), m.Name(), gotJSON, wantJSON)
					}
				}
			}
		}
	}
	for _, v := range []string{"grpc", "http-protobuf", "http-json"} {
		for k := 0; k < wantMs.Len(); k++ {
			if n := seen[v+"/"+wantMs.At(k).Name()]; n != 1 {
				t.Errorf("%s/%s arrived %d times, want 1", v, wantMs.At(k).Name(), n)
			}
		}
	}
}

// single wraps one metric in a Metrics with no resource, for comparison.
func single(m pmetric.Metric) pmetric.Metrics {
	md := pmetric.NewMetrics()
	m.CopyTo(md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty())
	return md
}

func TestGracefulStopLosesNothingAcknowledged(t *testing.T) {
	r := startRelay(t)
	client := e2e.NewHTTPClient(r.httpURL, nil)

	var (
		mu    sync.Mutex
		acked []int64
		next  atomic.Int64
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	const batch = 50
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				first := next.Add(batch) - batch
				if err := client.SendLogs(context.Background(), e2e.FluentBitLogs(batch, first), e2e.Encoding{Gzip: true}); err != nil {
					continue // refused or cut off by the shutdown: not acknowledged
				}
				mu.Lock()
				for s := first; s < first+batch; s++ {
					acked = append(acked, s)
				}
				mu.Unlock()
			}
		}()
	}
	// Let data flow, then stop the collector in the middle of the stream.
	deadline := time.Now().Add(30 * time.Second)
	for r.sink.LogRecordCount() < 2000 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := r.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := r.Wait(time.Minute)
	stop.Store(true)
	wg.Wait()
	if err != nil || code != 0 {
		t.Fatalf("SIGTERM: exit %d, %v", code, err)
	}

	mu.Lock()
	defer mu.Unlock()
	rep := r.sink.Loss(acked)
	t.Logf("graceful stop: %s (offered %d)", rep, next.Load())
	if len(acked) < 2000 {
		t.Fatalf("only %d records acknowledged before the stop: the test did not load the collector", len(acked))
	}
	if rep.Missing != 0 || rep.Duplicated != 0 {
		t.Fatalf("graceful stop lost or duplicated acknowledged data: %s", rep)
	}
	for seq := range r.sink.SeqCounts() {
		if seq < 0 || seq >= next.Load() {
			t.Fatalf("sink got seq %d that was never sent", seq)
		}
	}
}

func TestHealthAndSelfMetrics(t *testing.T) {
	r := startRelay(t)
	e2e.WaitHTTP(t, r.healthURL, http.StatusOK, 30*time.Second)

	client := e2e.NewHTTPClient(r.httpURL, nil)
	if err := client.SendLogs(context.Background(), e2e.FluentBitLogs(123, 0), e2e.Encoding{}); err != nil {
		t.Fatal(err)
	}
	r.sink.WaitForLogRecords(t, 123, time.Minute)

	// The exporter's counter is updated after the sink answered; poll for it.
	// The HTTP intake's counters carry the labels dashboards and alerts select.
	want := []struct {
		name  string
		match map[string]string
		v     float64
	}{
		{"otelcol_receiver_accepted_log_records", map[string]string{"receiver": "otlp_http_pooled", "transport": "http"}, 123},
		{"otelcol_exporter_sent_log_records", nil, 123},
	}
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for {
		body = scrape(t, r.metricsURL)
		m, err := promtext.Parse(strings.NewReader(body))
		if err != nil {
			t.Fatalf("self-metrics do not parse: %v\n%s", err, body)
		}
		ok := true
		for _, w := range want {
			if got, _ := m.Sum(w.name, w.match); got != w.v {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			for _, w := range want {
				got, _ := m.Sum(w.name, w.match)
				t.Errorf("%s%v = %v, want %v", w.name, w.match, got, w.v)
			}
			t.Fatalf("self-metrics:\n%s", body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInvalidConfigsFailWithClearErrors(t *testing.T) {
	const valid = `
receivers:
  otlp:
    protocols: {http: {endpoint: "127.0.0.1:0"}}
exporters:
  debug: {}
service:
  pipelines:
    logs: {receivers: [otlp], exporters: [debug]}
`
	edit := func(old, new string) string { return strings.Replace(valid, old, new, 1) }
	cases := []struct {
		name   string
		config string
		want   []string
	}{
		{"unknown component", edit("debug: {}", "debug: {}\n  kafka: {}"), []string{"kafka", "unknown type"}},
		{"misspelt key", edit("debug: {}", "debug: {verbosityy: detailed}"), []string{"verbosityy"}},
		{"missing env var", edit("debug: {}", "otlp_http:\n    endpoint: ${env:RELAY_TEST_UNSET_BACKEND}\n  debug: {}"), []string{"RELAY_TEST_UNSET_BACKEND", "not set"}},
		{"pipeline names an undefined exporter", edit("exporters: [debug]", "exporters: [debug, otlp_grpc/missing]"), []string{"otlp_grpc/missing"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := e2e.WriteConfig(t, tc.config)
			for _, args := range [][]string{
				{"validate", "--config", path},
				{"--config", path},
			} {
				out, code := e2e.Run(t, time.Minute, nil, args...)
				if code == 0 {
					t.Fatalf("%v exited 0, want an error:\n%s", args, out)
				}
				for _, w := range tc.want {
					if !strings.Contains(out, w) {
						t.Errorf("%v: output does not name %q:\n%s", args, w, out)
					}
				}
			}
		})
	}
}

// TestLocalConfigShowsTelemetry runs config/local.yaml, the config of `make run`, on
// free ports: with no client at all the console shows the collector's own metrics
// within 15 seconds, and Ctrl-C (SIGINT) exits 0.
func TestLocalConfigShowsTelemetry(t *testing.T) {
	metricsPort := e2e.FreePort(t)
	c := e2e.Start(t, "", e2e.Options{
		Args: []string{"--config", filepath.Join(e2e.RepoRoot(), "config", "local.yaml")},
		Env: []string{
			"RELAY_OTLP_GRPC_ENDPOINT=" + e2e.FreeAddr(t),
			"RELAY_OTLP_HTTP_ENDPOINT=" + e2e.FreeAddr(t),
			"RELAY_HEALTH_ENDPOINT=" + e2e.FreeAddr(t),
			"RELAY_PPROF_ENDPOINT=" + e2e.FreeAddr(t),
			"RELAY_METRICS_PORT=" + strconv.Itoa(metricsPort),
		},
	})
	// The debug exporter at verbosity normal prints one line per metric data point.
	if err := c.WaitForOutput("otelcol_process_uptime", 15*time.Second); err != nil {
		t.Fatalf("no telemetry on the console within 15s: %v", err)
	}
	if err := c.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code, err := c.Wait(30 * time.Second); err != nil || code != 0 {
		t.Fatalf("Ctrl-C: exit %d, %v", code, err)
	}
}

// The build keeps the service discoveries a Kubernetes relay uses (Makefile
// BUILDTAGS): kubernetes and dns, plus file and http, which Prometheus always
// has. A scrape config that names one the build leaves out is refused at
// start, naming the field, instead of starting without its targets.
func TestServiceDiscoveryInTheBuild(t *testing.T) {
	config := func(sd string) string {
		return `
receivers:
  prometheus:
    config:
      scrape_configs:
        - job_name: sd
` + sd + `
exporters:
  debug: {}
service:
  pipelines:
    metrics: {receivers: [prometheus], exporters: [debug]}
`
	}
	kept := map[string]string{
		"kubernetes": "          kubernetes_sd_configs: [{role: pod}]",
		"dns":        "          dns_sd_configs: [{names: [prometheus.example], type: A, port: 9090}]",
		"file":       "          file_sd_configs: [{files: [/etc/relay/targets.json]}]",
		"http":       "          http_sd_configs: [{url: https://sd.example/targets}]",
	}
	for name, sd := range kept {
		t.Run(name, func(t *testing.T) {
			if out, code := e2e.Run(t, time.Minute, nil, "validate", "--config", e2e.WriteConfig(t, config(sd))); code != 0 {
				t.Fatalf("validate exited %d:\n%s", code, out)
			}
		})
	}
	for _, field := range []string{"ec2_sd_configs", "azure_sd_configs", "gce_sd_configs", "consul_sd_configs"} {
		t.Run(field, func(t *testing.T) {
			out, code := e2e.Run(t, time.Minute, nil, "validate", "--config", e2e.WriteConfig(t, config("          "+field+": [{}]")))
			if code == 0 {
				t.Fatalf("validate accepted %s, which the build leaves out:\n%s", field, out)
			}
			if !strings.Contains(out, "field "+field+" not found") {
				t.Errorf("the error does not name %s:\n%s", field, out)
			}
		})
	}
}
