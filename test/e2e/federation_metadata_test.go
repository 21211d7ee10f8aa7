// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// TestFederationMetadataDown points the processor at a port where nothing
// listens: every series still arrives, as the gauges the receiver made, and the
// failure is logged once per refresh with a reason.
func TestFederationMetadataDown(t *testing.T) {
	target, prom := startPrometheus(t)
	f := startFederation(t, target, prom, "http://"+closedAddr(t))
	for _, n := range []string{"demo_requests_total", "demo_request_duration_seconds_bucket",
		"demo_response_size_bytes", "demo_temperature_celsius", "job:demo_queue_depth:sum"} {
		waitMetric(t, f.sink, n, pmetric.MetricTypeGauge, 90*time.Second)
	}
	if err := f.relay.WaitForOutput("Metric metadata unavailable", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.relay.Output(), "connection refused") {
		t.Errorf("the log does not say why the metadata is unavailable:\n%s", f.relay.Output())
	}
	m := scrapeSelf(t, f.metricsURL)
	if v, _ := m.Sum("otelcol_processor_federation_types_metadata_refresh_failures", nil); v < 1 {
		t.Errorf("refresh failures %v, want at least 1", v)
	}
}

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestFederationBadMetadataResponses serves malformed and endless metadata:
// each is refused with a clear error in the log, data still flows as gauges,
// and the relay's memory stays bounded although the server offers gigabytes.
func TestFederationBadMetadataResponses(t *testing.T) {
	target, prom := startPrometheus(t)
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"malformed", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"status":"success","data":{"demo_requests_total":[{"type":"coun`)
		}, "malformed metadata response"},
		{"huge", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"status":"success","data":{"demo_requests_total":[{"type":"counter","help":"`)
			chunk := bytes.Repeat([]byte("x"), 256<<10)
			for range (4 << 30) / len(chunk) { // 4 GiB unless the client hangs up
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, "exceeds max_response_size (1048576 bytes)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := &http.Server{Handler: c.handler, ReadHeaderTimeout: 10 * time.Second}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = bad.Serve(l) }()
			t.Cleanup(func() { _ = bad.Close() })

			f := startFederation(t, target, prom, "http://"+l.Addr().String())
			waitMetric(t, f.sink, "demo_requests_total", pmetric.MetricTypeGauge, 90*time.Second)
			if werr := f.relay.WaitForOutput(c.want, 30*time.Second); werr != nil {
				t.Fatal(werr)
			}
			// Several refreshes (every 2s) later, the relay has not grown.
			time.Sleep(6 * time.Second)
			st, err := e2e.ReadProc(f.relay.PID())
			if err != nil {
				t.Fatal(err)
			}
			if hwm := st.HWM; hwm > 400<<20 {
				t.Errorf("relay peak RSS %d MiB while refusing bad metadata", hwm>>20)
			}
			if _, ok := latest(f.sink, "demo_request_duration_seconds"); ok {
				t.Error("types were restored from metadata that was refused")
			}
		})
	}
}
