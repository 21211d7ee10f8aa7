package e2e

import (
	"io"

	"github.com/klauspost/compress/zstd"

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

var (
	FluentBitLogs      = otlpfixture.FluentBitLogs
	FluentBitChunkLogs = otlpfixture.FluentBitChunkLogs
	EncodeLogs         = otlpfixture.EncodeLogs
	WaitFor            = otlpfixture.WaitFor
	SendLogsGRPC       = otlpfixture.SendLogsGRPC
)

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
