// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// scriptedBackend answers a request with first, every later one 200.
type scriptedBackend struct {
	srv    *httptest.Server
	caFile string
	mu     sync.Mutex
	first  func(http.ResponseWriter, *http.Request)
	n      int
}

func newScriptedBackend(t *testing.T) *scriptedBackend {
	s := &scriptedBackend{}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		n, first := s.n, s.first
		s.n++
		s.mu.Unlock()
		if n == 0 {
			first(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(s.srv.Close)
	s.caFile = writeCA(t, s.srv)
	return s
}

func (s *scriptedBackend) script(first func(http.ResponseWriter, *http.Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.first, s.n = first, 0
}

func (s *scriptedBackend) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// outcome is what an exporter made of the backend's answers: the error
// ConsumeLogs returned, the requests sent, the intervals the retry sender
// waited (as it logs them), the partial-success warnings and the exporter's
// sent and failed counters.
type outcome struct {
	Err       string
	Permanent bool
	Requests  int
	Intervals []string
	RetryErrs []string
	Warnings  []string
	Sent      int64
	Failed    int64
}

func sumOf(t *testing.T, tel *componenttest.Telemetry, name string) int64 {
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0 // never recorded
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a %T", name, m.Data)
	var n int64
	for _, dp := range sum.DataPoints {
		n += dp.Value
	}
	return n
}

// exportOnce sends 10 records through exporter f/x (config raw) to s, which
// answers first to the first request, and returns the outcome.
func exportOnce(t *testing.T, f exporter.Factory, raw map[string]any, s *scriptedBackend, first func(http.ResponseWriter, *http.Request)) outcome {
	s.script(first)
	core, logs := observer.New(zapcore.InfoLevel)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := exportertest.NewNopSettings(f.Type())
	set.ID = component.MustNewIDWithName(f.Type().String(), "x")
	set.TelemetrySettings = tel.NewTelemetrySettings()
	set.Logger = zap.New(core)
	exp, err := f.CreateLogs(context.Background(), set, configFrom(t, f, raw))
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	err = exp.ConsumeLogs(context.Background(), makeLogs(0, 10))
	require.NoError(t, exp.Shutdown(context.Background()))
	o := outcome{Requests: s.requests(), Sent: sumOf(t, tel, "otelcol_exporter_sent_log_records"), Failed: sumOf(t, tel, "otelcol_exporter_send_failed_log_records")}
	if err != nil {
		// each exporter has a backend of its own
		o.Err, o.Permanent = strings.ReplaceAll(err.Error(), s.srv.URL, "https://backend"), consumererror.IsPermanent(err)
	}
	for _, e := range logs.FilterMessage("Exporting failed. Will retry the request after interval.").All() {
		o.Intervals = append(o.Intervals, e.ContextMap()["interval"].(string))
		// a Retry-After date in the past is a negative throttle, measured
		// from the clock: only its sign is the answer's
		msg := pastThrottle.ReplaceAllString(e.ContextMap()["error"].(string), "Throttle (negative)")
		// net/http words the client's timeout as whichever of its timer and
		// the request context's deadline it saw first
		msg = clientTimeout.ReplaceAllString(msg, "client timeout")
		// each exporter has a backend of its own
		msg = strings.ReplaceAll(msg, s.srv.URL, "https://backend")
		o.RetryErrs = append(o.RetryErrs, msg)
	}
	for _, e := range logs.FilterMessage("Partial success response").All() {
		o.Warnings = append(o.Warnings, fmt.Sprint(e.ContextMap()))
	}
	return o
}

var (
	pastThrottle  = regexp.MustCompile(`Throttle \(-[0-9.hmsµn]+\)`)
	clientTimeout = regexp.MustCompile(`(context deadline exceeded|net/http: request canceled)( \(Client\.Timeout exceeded while awaiting headers\))?`)
)

func respond(code int, header http.Header, body []byte) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(code)
		_, _ = w.Write(body)
	}
}

// TestResponsesAsOTLPHTTP: otlp_http and otlp_http_wire, on the same config,
// against the same answers, come to the same outcome: sent, retried (after
// the same intervals: the backoff's, or Retry-After's when longer), dropped
// as permanent with the same error, and counted the same.
func TestResponsesAsOTLPHTTP(t *testing.T) {
	partialProto, partialJSON := partialResponse(t)
	retryInfo, err := anypb.New(&errdetails.RetryInfo{RetryDelay: durationpb.New(3 * time.Second)})
	require.NoError(t, err)
	st, err := proto.Marshal(&status.Status{Code: 3, Message: "record 4 has no body", Details: []*anypb.Any{retryInfo}})
	require.NoError(t, err)
	protoType := http.Header{"Content-Type": {"application/x-protobuf"}}
	jsonType := http.Header{"Content-Type": {"application/json"}}
	retryAfter := func(v string) http.Header { return http.Header{"Retry-After": {v}} }

	const (
		sent      = "sent"
		retried   = "retried"
		permanent = "permanent"
	)
	for _, tc := range []struct {
		name     string
		first    func(http.ResponseWriter, *http.Request)
		want     string
		interval string // the retry's wait, in terms of the config below
	}{
		{"200", respond(200, nil, nil), sent, ""},
		{"200 partial success, protobuf", respond(200, protoType, partialProto), sent, ""},
		{"200 partial success, JSON", respond(200, jsonType, partialJSON), sent, ""},
		{"200 protobuf body that does not parse", respond(200, protoType, []byte{0xff, 0xff}), permanent, ""},
		{"200 JSON body that does not parse", respond(200, jsonType, []byte("{")), permanent, ""},
		{"200 other content type", respond(200, http.Header{"Content-Type": {"text/plain"}}, []byte("ok")), sent, ""},
		{"400 with a Status", respond(400, protoType, st), permanent, ""},
		{"400 with a body that is no Status", respond(400, nil, []byte("bad request")), permanent, ""},
		{"401", respond(401, nil, nil), permanent, ""},
		{"404", respond(404, nil, nil), permanent, ""},
		{"413", respond(413, nil, nil), permanent, ""},
		{"500", respond(500, nil, nil), permanent, ""},
		{"429", respond(429, nil, nil), retried, "50ms"},
		{"429 Retry-After 1", respond(429, retryAfter("1"), nil), retried, "1s"},
		{"503", respond(503, nil, nil), retried, "50ms"},
		{"503 Retry-After 1", respond(503, retryAfter("1"), nil), retried, "1s"},
		{"503 Retry-After a past date", respond(503, retryAfter("Mon, 02 Jan 2006 15:04:05 GMT"), nil), retried, "50ms"},
		{"503 Retry-After that does not parse", respond(503, retryAfter("soon"), nil), retried, "50ms"},
		{"503 with a Status", respond(503, protoType, st), retried, "50ms"},
		{"502", respond(502, nil, nil), retried, "50ms"},
		{"504", respond(504, nil, nil), retried, "50ms"},
		{"torn connection", func(w http.ResponseWriter, _ *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}, retried, "50ms"},
		{"slow answer past timeout", func(_ http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // the client gives up at `timeout`
		}, retried, "50ms"},
	} {
		for _, compression := range []string{"gzip", "none"} {
			t.Run(tc.name+"/"+compression, func(t *testing.T) {
				// A backend each: a request of the first exporter that reached
				// a shared one late (the slow answer's, on a loaded machine)
				// would be counted as the second's.
				config := func(s *scriptedBackend) map[string]any {
					raw := map[string]any{
						"compression": compression,
						"endpoint":    s.srv.URL,
						"tls":         map[string]any{"ca_file": s.caFile},
						// Long enough that only the slow answer meets it on a loaded
						// machine (TLS handshakes under -race take their time);
						// that one waits for it.
						"timeout": "30s",
						"retry_on_failure": map[string]any{
							"initial_interval": "50ms", "randomization_factor": 0, "multiplier": 2, "max_interval": "5s", "max_elapsed_time": "1m",
						},
						"sending_queue": map[string]any{"enabled": false},
					}
					if tc.name == "slow answer past timeout" {
						// The timeout covers the TLS handshake too: long enough that a
						// handshake under -race on a loaded machine leaves time for the
						// request to reach the slow handler.
						raw["timeout"] = "5s"
					}
					return raw
				}
				us, ws := newScriptedBackend(t), newScriptedBackend(t)
				upstream := exportOnce(t, otlphttpexporter.NewFactory(), config(us), us, tc.first)
				wire := exportOnce(t, NewFactory(), config(ws), ws, tc.first)
				assert.Equal(t, upstream, wire, "otlp_http_wire's outcome is otlp_http's")
				if tc.name == "slow answer past timeout" {
					assert.Contains(t, upstream.RetryErrs, `failed to make an HTTP request: Post "https://backend/v1/logs": client timeout`)
				}

				// and upstream's is what the OTLP spec asks for
				switch tc.want {
				case sent:
					assert.Empty(t, upstream.Err)
					assert.Equal(t, outcome{Requests: 1, Sent: 10, Warnings: upstream.Warnings}, upstream)
				case permanent:
					assert.True(t, upstream.Permanent, upstream.Err)
					assert.Equal(t, 1, upstream.Requests, "not retried")
					assert.Equal(t, int64(10), upstream.Failed)
				case retried:
					assert.Empty(t, upstream.Err)
					assert.Equal(t, 2, upstream.Requests)
					assert.Equal(t, []string{tc.interval}, upstream.Intervals)
					assert.Equal(t, int64(10), upstream.Sent)
					assert.Zero(t, upstream.Failed)
				}
			})
		}
	}
}
