// SPDX-License-Identifier: Apache-2.0

package admissionextension

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// queueMetrics serves a Prometheus exposition whose exporter queue size the test
// sets, like the collector's own telemetry endpoint.
func queueMetrics(t *testing.T, queued int64) (string, *atomic.Int64) {
	t.Helper()
	size := new(atomic.Int64)
	size.Store(queued)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE otelcol_exporter_queue_size gauge\n"+
			"otelcol_exporter_queue_size{data_type=\"logs\",exporter=\"otlp_http/default\",otel_scope_name=\"x\"} %d\n"+
			"otelcol_exporter_queue_size{data_type=\"metrics\",exporter=\"otlp_http/default\",otel_scope_name=\"x\"} 0\n"+
			"otelcol_exporter_queue_size_total_bogus 99\n", size.Load())
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics", size
}

// drainConfig polls the queue metrics at metricsURL every 20 ms.
func drainConfig(metricsURL string) *Config {
	cfg := createDefaultConfig()
	cfg.Drain.MetricsURL = metricsURL
	cfg.Drain.PollInterval = 20 * time.Millisecond
	return cfg
}

func startDraining(t *testing.T, cfg *Config) (*admission, string) {
	t.Helper()
	cfg.Drain.Endpoint = "127.0.0.1:0"
	a := newTestAdmissionCfg(t, cfg)
	if err := a.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	if err := a.Ready(); err != nil {
		t.Fatal(err)
	}
	return a, "http://" + a.drainAddr.String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	ans := <-getAsync(url)
	if ans.code == 0 {
		t.Fatal(ans.body)
	}
	return ans.code, ans.body
}

type answer struct {
	code int
	body string
}

func getAsync(url string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		resp, err := http.Get(url)
		if err != nil {
			ch <- answer{0, err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		ch <- answer{resp.StatusCode, string(b)}
	}()
	return ch
}

func TestDrainRefusesNewRequestsAndWaitsForTheQueue(t *testing.T) {
	metricsURL, size := queueMetrics(t, 4096)
	cfg := drainConfig(metricsURL)
	a, drainURL := startDraining(t, cfg)
	srv := httptest.NewServer(wrapOK(t, a))
	defer srv.Close()

	if code, _ := get(t, drainURL+"/ready"); code != http.StatusOK {
		t.Fatalf("/ready before the drain: %d", code)
	}
	resp := post(t, srv.URL)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("before the drain: %d", resp.StatusCode)
	}

	drained := getAsync(drainURL + "/drain")
	waitFor(t, func() bool { return a.draining.Load() })
	resp = post(t, srv.URL)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !resp.Close {
		t.Fatalf("while draining: %d, Retry-After %q, close %v; want 503 with Retry-After and Connection: close",
			resp.StatusCode, resp.Header.Get("Retry-After"), resp.Close)
	}
	_, err := a.unary(context.Background(), nil, nil, func(context.Context, any) (any, error) { return nil, nil })
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("gRPC while draining: %v; want UNAVAILABLE", err)
	}
	if code, _ := get(t, drainURL+"/ready"); code != http.StatusServiceUnavailable {
		t.Fatalf("/ready while draining: %d, want 503", code)
	}
	select {
	case ans := <-drained:
		t.Fatalf("/drain returned %d %q with 4096 bytes still queued", ans.code, ans.body)
	case <-time.After(200 * time.Millisecond):
	}
	size.Store(0)
	select {
	case ans := <-drained:
		if ans.code != http.StatusOK || !strings.Contains(ans.body, "queues empty") {
			t.Fatalf("/drain after the queue emptied: %d %q", ans.code, ans.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("/drain did not return after the queue emptied")
	}
}

func TestDrainGivesUpAndSaysWhatIsLeft(t *testing.T) {
	metricsURL, _ := queueMetrics(t, 123456)
	cfg := drainConfig(metricsURL)
	cfg.Drain.Timeout = time.Second
	_, drainURL := startDraining(t, cfg)
	code, body := get(t, drainURL+"/drain")
	if code != http.StatusInternalServerError || !strings.Contains(body, "123456 left") || !strings.Contains(body, "otlp_http/default/logs=123456") {
		t.Fatalf("/drain with a stuck queue: %d %q; want 500 naming 123456 left in otlp_http/default/logs", code, body)
	}
}

func TestDrainWithoutQueueMetricWaitsAndSaysWhy(t *testing.T) {
	empty := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer empty.Close()
	cfg := drainConfig(empty.URL)
	cfg.Drain.Timeout = time.Second
	_, drainURL := startDraining(t, cfg)
	code, body := get(t, drainURL+"/drain")
	if code != http.StatusInternalServerError || !strings.Contains(body, "no otelcol_exporter_queue_size sample") {
		t.Fatalf("/drain without the queue metric: %d %q; an unknown queue must not count as empty", code, body)
	}
}

func TestDrainWaitsForRequestsInProgress(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Drain.PollInterval = 20 * time.Millisecond
	a, drainURL := startDraining(t, cfg)
	entered, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(wrap(t, a, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(entered)
		<-release // the pipeline is still persisting the request
	})))
	defer srv.Close()
	go func() { post(t, srv.URL) }()
	<-entered
	drained := getAsync(drainURL + "/drain")
	select {
	case ans := <-drained:
		t.Fatalf("/drain returned %d %q while a request was in progress", ans.code, ans.body)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	select {
	case ans := <-drained:
		if ans.code != http.StatusOK {
			t.Fatalf("/drain: %d %q", ans.code, ans.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("/drain did not return after the request was answered")
	}
}

func TestNotReadyRefusesWithRetryableStatus(t *testing.T) {
	a := newTestAdmission(t, 2, time.Second)
	srv := httptest.NewServer(wrapOK(t, a))
	defer srv.Close()
	if err := a.NotReady(); err != nil {
		t.Fatal(err)
	}
	resp := post(t, srv.URL)
	if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close {
		t.Fatalf("after NotReady (SIGTERM): %d close=%v; want 503 with Connection: close", resp.StatusCode, resp.Close)
	}
}

func TestParseQueueSize(t *testing.T) {
	in := `# HELP otelcol_exporter_queue_size Current size of the retry queue
otelcol_exporter_queue_size{data_type="logs",exporter="otlp_http/default"} 1.5e+06
otelcol_exporter_queue_size{data_type="traces",exporter="otlp_http/b"} 7
otelcol_exporter_queue_size_other 5
otelcol_exporter_queue_capacity{data_type="logs",exporter="otlp_http/default"} 5.36870912e+08
`
	total, per, err := parseQueueSize(strings.NewReader(in))
	if err != nil || total != 1500007 || per["otlp_http/default/logs"] != 1500000 || per["otlp_http/b/traces"] != 7 {
		t.Fatalf("got %d %v %v", total, per, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
