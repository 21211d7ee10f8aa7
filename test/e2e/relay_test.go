// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/promtext"
)

// relay is one collector started on free ports and exporting to a sink.
type relay struct {
	*e2e.Collector
	sink       *otlpfixture.Sink
	grpcAddr   string
	httpURL    string
	healthURL  string
	metricsURL string
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
` + e2e.SelfMetricsTelemetry + `  pipelines:
    logs: {receivers: [otlp, otlp_http_pooled], processors: [memory_limiter, batch], exporters: [otlp_grpc/plaintext-sink]}
    metrics: {receivers: [otlp, otlp_http_pooled], processors: [memory_limiter, batch], exporters: [otlp_grpc/plaintext-sink]}
`

func startRelay(t *testing.T) *relay {
	t.Helper()
	sink := e2e.NewSink(t, otlpfixture.SinkOptions{})
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

func TestHealthAndSelfMetrics(t *testing.T) {
	r := startRelay(t)
	e2e.WaitHTTP(t, r.healthURL, http.StatusOK, 30*time.Second)

	client := e2e.NewHTTPClient(r.httpURL, nil)
	if err := client.SendLogs(context.Background(), otlpfixture.FluentBitLogs(123, 0), otlpfixture.Encoding{}); err != nil {
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
	b, err := e2e.Get(url, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
