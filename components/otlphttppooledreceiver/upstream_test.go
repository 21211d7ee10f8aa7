// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// recorder is the pipeline behind a receiver: it keeps what it consumed (as
// OTLP protobuf, to compare) and fails with err when set.
type recorder struct {
	mu      sync.Mutex
	err     error
	got     [][]byte
	discard bool // keep nothing: the benchmark's pipeline
}

func (r *recorder) consume(b []byte, err error) error {
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, b)
	return r.err
}

func (r *recorder) logs() consumer.Logs {
	c, _ := consumer.NewLogs(func(_ context.Context, ld plog.Logs) error {
		if r.discard {
			return nil
		}
		return r.consume(plogotlp.NewExportRequestFromLogs(ld).MarshalProto())
	})
	return c
}

func (r *recorder) metrics() consumer.Metrics {
	c, _ := consumer.NewMetrics(func(_ context.Context, md pmetric.Metrics) error {
		return r.consume(pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto())
	})
	return c
}

func (r *recorder) traces() consumer.Traces {
	c, _ := consumer.NewTraces(func(_ context.Context, td ptrace.Traces) error {
		return r.consume(ptraceotlp.NewExportRequestFromTraces(td).MarshalProto())
	})
	return c
}

// take returns what was consumed since the last take, and sets the next error.
func (r *recorder) take(next error) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got, r.err = nil, next
	return got
}

// startSignals creates f's receivers for the three signals on cfg, starts them
// and shuts them down when the test ends.
func startSignals(t testing.TB, f receiver.Factory, cfg component.Config, rec *recorder) {
	ctx := context.Background()
	set := receivertest.NewNopSettings(f.Type())
	tr, err := f.CreateTraces(ctx, set, cfg, rec.traces())
	require.NoError(t, err)
	mr, err := f.CreateMetrics(ctx, set, cfg, rec.metrics())
	require.NoError(t, err)
	lr, err := f.CreateLogs(ctx, set, cfg, rec.logs())
	require.NoError(t, err)
	for _, c := range []component.Component{tr, mr, lr} {
		require.NoError(t, c.Start(ctx, componenttest.NewNopHost()))
		t.Cleanup(func() { assert.NoError(t, c.Shutdown(context.Background())) })
	}
}

func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// startPair runs upstream's otlp receiver (HTTP only) and ours with the same
// HTTP settings and body limit, each in front of its own recorder.
func startPair(t testing.TB, maxBody int64) (upURL, ourURL string, up, ours *recorder) {
	return startPairWith(t, maxBody, nil)
}

// startPairWith starts both receivers with the given compression_algorithms
// (nil: confighttp's default).
func startPairWith(t testing.TB, maxBody int64, algorithms []string) (upURL, ourURL string, up, ours *recorder) {
	httpCfg := createDefaultConfig().HTTPConfig
	httpCfg.ServerConfig.MaxRequestBodySize = maxBody
	httpCfg.ServerConfig.CompressionAlgorithms = algorithms

	upCfg := otlpreceiver.NewFactory().CreateDefaultConfig().(*otlpreceiver.Config)
	upCfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
	upHTTP := httpCfg
	upHTTP.ServerConfig.NetAddr.Endpoint = freeAddr(t)
	upCfg.Protocols.HTTP = configoptional.Some(upHTTP)
	up = &recorder{}
	startSignals(t, otlpreceiver.NewFactory(), upCfg, up)

	ourCfg := &Config{HTTPConfig: httpCfg}
	ourCfg.ServerConfig.NetAddr.Endpoint = freeAddr(t)
	require.NoError(t, ourCfg.Validate())
	ours = &recorder{}
	startSignals(t, NewFactory(), ourCfg, ours)
	return "http://" + upHTTP.ServerConfig.NetAddr.Endpoint, "http://" + ourCfg.ServerConfig.NetAddr.Endpoint, up, ours
}

// exchange is one request and the pipeline's answer to it.
type exchange struct {
	name, method, path, contentType, contentEncoding string
	body                                             []byte
	consumerErr                                      error
}

type answer struct {
	status                  int
	contentType, retryAfter string
	body                    []byte
	consumed                [][]byte
}

func send(t *testing.T, url string, x exchange, rec *recorder) answer {
	req, err := http.NewRequest(x.method, url+x.path, bytes.NewReader(x.body))
	require.NoError(t, err)
	if x.contentType != "" {
		req.Header.Set("Content-Type", x.contentType)
	}
	if x.contentEncoding != "" {
		req.Header.Set("Content-Encoding", x.contentEncoding)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{
		status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"),
		retryAfter: resp.Header.Get("Retry-After"), body: body, consumed: rec.take(nil),
	}
}

func gz(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// damaged returns a copy of b with the byte at i (from the end if negative)
// inverted.
func damaged(b []byte, i int) []byte {
	b = slices.Clone(b)
	if i < 0 {
		i += len(b)
	}
	b[i] ^= 0xff
	return b
}

func withRetryInfo(t *testing.T, c codes.Code, after time.Duration) error {
	s, err := status.New(c, "slow down").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(after)})
	require.NoError(t, err)
	return s.Err()
}

// TestSameResponsesAsUpstream sends upstream's otlp receiver and this one the
// same requests, good and bad, with pipelines failing alike, and requires the
// same status, headers, body and consumed data from both.
func TestSameResponsesAsUpstream(t *testing.T) {
	const limit = 64 << 10 // small, to test it
	upURL, ourURL, up, ours := startPair(t, limit)
	const pb, js = "application/x-protobuf", "application/json"
	logs, err := plogotlp.NewExportRequestFromLogs(sampleLogs(3)).MarshalProto()
	require.NoError(t, err)
	logsJSON, err := plogotlp.NewExportRequestFromLogs(sampleLogs(3)).MarshalJSON()
	require.NoError(t, err)
	metrics, err := pmetricotlp.NewExportRequestFromMetrics(sampleMetrics()).MarshalProto()
	require.NoError(t, err)
	metricsJSON, err := pmetricotlp.NewExportRequestFromMetrics(sampleMetrics()).MarshalJSON()
	require.NoError(t, err)
	traces, err := ptraceotlp.NewExportRequestFromTraces(sampleTraces()).MarshalProto()
	require.NoError(t, err)
	tracesJSON, err := ptraceotlp.NewExportRequestFromTraces(sampleTraces()).MarshalJSON()
	require.NoError(t, err)
	big, err := plogotlp.NewExportRequestFromLogs(sampleLogs(1000)).MarshalProto()
	require.NoError(t, err)
	require.Greater(t, len(big), limit, "the oversized body must exceed max_request_body_size")

	post := func(name, path, ct string, body []byte) exchange {
		return exchange{name: name, method: http.MethodPost, path: path, contentType: ct, body: body}
	}
	failing := func(x exchange, err error) exchange { x.consumerErr = err; return x }
	encoded := func(x exchange, enc string, body []byte) exchange {
		x.contentEncoding, x.body = enc, body
		return x
	}
	cases := []exchange{
		post("logs", "/v1/logs", pb, logs),
		post("logs json", "/v1/logs", js, logsJSON),
		post("metrics", "/v1/metrics", pb, metrics),
		post("metrics json", "/v1/metrics", js, metricsJSON),
		post("traces", "/v1/traces", pb, traces),
		post("traces json", "/v1/traces", js, tracesJSON),
		post("content type with parameters", "/v1/logs", pb+"; charset=utf-8", logs),
		post("empty request", "/v1/logs", pb, nil),
		post("empty json request", "/v1/logs", js, []byte("{}")),
		post("malformed protobuf", "/v1/logs", pb, []byte{0x0a, 0xff, 0xff, 0x01}),
		post("malformed json", "/v1/logs", js, []byte(`{"resourceLogs": [`)),
		post("metrics sent to the logs path", "/v1/logs", pb, metrics),
		post("unsupported content type", "/v1/logs", "text/plain", logs),
		post("no content type", "/v1/logs", "", logs),
		post("unknown path", "/v1/unknown", pb, logs),
		{name: "GET", method: http.MethodGet, path: "/v1/logs", contentType: pb},
		{name: "PUT", method: http.MethodPut, path: "/v1/logs", contentType: pb, body: logs},
		encoded(post("gzip", "/v1/logs", pb, nil), "gzip", gz(t, logs)),
		encoded(post("not gzip", "/v1/logs", pb, nil), "gzip", logs),
		encoded(post("gzip, two members", "/v1/logs", pb, nil), "gzip", slices.Concat(gz(t, logs[:len(logs)/2]), gz(t, logs[len(logs)/2:]))),
		encoded(post("gzip, checksum damaged", "/v1/logs", pb, nil), "gzip", damaged(gz(t, logs), -8)),
		encoded(post("gzip, deflate data damaged", "/v1/logs", pb, nil), "gzip", damaged(gz(t, logs), 12)),
		encoded(post("gzip, truncated", "/v1/logs", pb, nil), "gzip", gz(t, logs)[:len(gz(t, logs))-6]),
		encoded(post("gzip after a damaged one", "/v1/logs", pb, nil), "gzip", gz(t, logs)),
		encoded(post("unknown content encoding", "/v1/logs", pb, nil), "br2", logs),
		post("body over max_request_body_size", "/v1/logs", pb, big),
		encoded(post("gzip bomb over max_request_body_size", "/v1/logs", pb, nil), "gzip", gz(t, big)),
		encoded(post("gzip bomb, json", "/v1/logs", js, nil), "gzip", gz(t, big)),
		failing(post("pipeline refuses", "/v1/logs", pb, logs), errors.New("sending queue is full")),
		failing(post("pipeline refuses, json", "/v1/metrics", js, metricsJSON), errors.New("data refused due to high memory usage")),
		failing(post("permanent error", "/v1/traces", pb, traces), consumererror.NewPermanent(errors.New("cannot be exported"))),
		failing(post("throttled with retry info", "/v1/logs", pb, logs), withRetryInfo(t, codes.ResourceExhausted, 7*time.Second)),
		failing(post("unavailable with retry info, json", "/v1/logs", js, logsJSON), withRetryInfo(t, codes.Unavailable, 3*time.Second)),
		failing(post("wrapped status", "/v1/logs", pb, logs), fmt.Errorf("exporter: %w", status.Error(codes.InvalidArgument, "bad record"))),
	}
	sameAnswers(t, upURL, ourURL, up, ours, cases)
}

// sameAnswers sends each exchange to upstream's receiver and to ours and
// compares what the client and the pipeline got.
func sameAnswers(t *testing.T, upURL, ourURL string, up, ours *recorder, cases []exchange) {
	for _, x := range cases {
		t.Run(x.name, func(t *testing.T) {
			up.take(x.consumerErr)
			ours.take(x.consumerErr)
			want := send(t, upURL, x, up)
			got := send(t, ourURL, x, ours)
			assert.Equal(t, want.status, got.status, "status")
			assert.Equal(t, want.contentType, got.contentType, "Content-Type")
			assert.Equal(t, want.retryAfter, got.retryAfter, "Retry-After")
			assert.Equal(t, string(want.body), string(got.body), "body")
			assert.Equal(t, want.consumed, got.consumed, "data handed to the pipeline")
		})
	}
}
