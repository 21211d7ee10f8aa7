package e2e

import (
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
)

// NewSink starts an OTLP sink (otlpfixture.NewSink) closed when the test ends.
func NewSink(t T, opts SinkOptions) *Sink { return otlpfixture.NewSink(t, opts) }
