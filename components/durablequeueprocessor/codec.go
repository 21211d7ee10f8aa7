// SPDX-License-Identifier: Apache-2.0

package durablequeueprocessor // import "github.com/otelcol-relay/otelcol-relay/components/durablequeueprocessor"

import (
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// codec is what the queue needs to know of one signal's pdata.
type codec[T any] interface {
	marshal(T) ([]byte, error)
	unmarshal([]byte) (T, error)
	items(T) int
	empty() T
	// moveTo moves everything in src to the end of dst.
	moveTo(src, dst T)
}

type logsCodec struct {
	plog.ProtoMarshaler
	plog.ProtoUnmarshaler
}

func (c logsCodec) marshal(ld plog.Logs) ([]byte, error)  { return c.MarshalLogs(ld) }
func (c logsCodec) unmarshal(b []byte) (plog.Logs, error) { return c.UnmarshalLogs(b) }
func (logsCodec) items(ld plog.Logs) int                  { return ld.LogRecordCount() }
func (logsCodec) empty() plog.Logs                        { return plog.NewLogs() }
func (logsCodec) moveTo(src, dst plog.Logs)               { src.ResourceLogs().MoveAndAppendTo(dst.ResourceLogs()) }

type metricsCodec struct {
	pmetric.ProtoMarshaler
	pmetric.ProtoUnmarshaler
}

func (c metricsCodec) marshal(md pmetric.Metrics) ([]byte, error)  { return c.MarshalMetrics(md) }
func (c metricsCodec) unmarshal(b []byte) (pmetric.Metrics, error) { return c.UnmarshalMetrics(b) }
func (metricsCodec) items(md pmetric.Metrics) int                  { return md.DataPointCount() }
func (metricsCodec) empty() pmetric.Metrics                        { return pmetric.NewMetrics() }
func (metricsCodec) moveTo(src, dst pmetric.Metrics) {
	src.ResourceMetrics().MoveAndAppendTo(dst.ResourceMetrics())
}

type tracesCodec struct {
	ptrace.ProtoMarshaler
	ptrace.ProtoUnmarshaler
}

func (c tracesCodec) marshal(td ptrace.Traces) ([]byte, error)  { return c.MarshalTraces(td) }
func (c tracesCodec) unmarshal(b []byte) (ptrace.Traces, error) { return c.UnmarshalTraces(b) }
func (tracesCodec) items(td ptrace.Traces) int                  { return td.SpanCount() }
func (tracesCodec) empty() ptrace.Traces                        { return ptrace.NewTraces() }
func (tracesCodec) moveTo(src, dst ptrace.Traces) {
	src.ResourceSpans().MoveAndAppendTo(dst.ResourceSpans())
}
