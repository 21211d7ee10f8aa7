// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"io"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/grpc"

	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// T is what the harness needs from a test: *testing.T satisfies it, and so does
// the benchmark's runner outside `go test`.
type T = tb.T

// The OTLP fixtures live in internal/otlpfixture so that unit tests can use
// them without this package's Kubernetes and Prometheus dependencies; these
// names keep the end-to-end tests' spelling.
type (
	Sink        = otlpfixture.Sink
	SinkOptions = otlpfixture.SinkOptions
	Request     = otlpfixture.Request
	LossReport  = otlpfixture.LossReport
	Encoding    = otlpfixture.Encoding
)

// SeqAttr is the log record attribute that carries a sender's sequence number.
const SeqAttr = otlpfixture.SeqAttr

// FluentBitLogs builds n fluent-bit shaped records numbered from first.
func FluentBitLogs(n int, first int64) plog.Logs { return otlpfixture.FluentBitLogs(n, first) }

// FluentBitChunkLogs builds n records as deploy/fluent-bit sends a chunk.
func FluentBitChunkLogs(n int, first int64) plog.Logs {
	return otlpfixture.FluentBitChunkLogs(n, first)
}

// EncodeLogs encodes ld as an OTLP/HTTP request body.
func EncodeLogs(ld plog.Logs, enc Encoding) (body []byte, contentType, contentEncoding string, err error) {
	return otlpfixture.EncodeLogs(ld, enc)
}

// SendLogsGRPC exports ld over an existing connection.
func SendLogsGRPC(ctx context.Context, cc *grpc.ClientConn, ld plog.Logs) error {
	return otlpfixture.SendLogsGRPC(ctx, cc, ld)
}

// WaitFor polls cond until it holds or timeout passes, and reports which.
func WaitFor(timeout time.Duration, cond func() bool) bool { return otlpfixture.WaitFor(timeout, cond) }

// WaitEvery is otlpfixture.WaitEvery: WaitFor polling every interval.
func WaitEvery(timeout, interval time.Duration, cond func() bool) bool {
	return otlpfixture.WaitEvery(timeout, interval, cond)
}

// NewSink starts an OTLP sink (otlpfixture.NewSink) closed when the test ends.
// It also decodes zstd, which exporters may be configured to send.
func NewSink(t T, opts SinkOptions) *Sink {
	t.Helper()
	if opts.Decoders == nil {
		opts.Decoders = map[string]func(io.Reader) (io.ReadCloser, error){"zstd": newZstdReader}
	}
	return otlpfixture.NewSink(t, opts)
}

func newZstdReader(r io.Reader) (io.ReadCloser, error) {
	zr, err := zstd.NewReader(r)
	if err != nil {
		return nil, err
	}
	return zr.IOReadCloser(), nil
}
