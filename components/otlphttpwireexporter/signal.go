// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	pdatareq "go.opentelemetry.io/collector/pdata/xpdata/request"
	"go.opentelemetry.io/collector/pipeline"
)

// signal holds what differs between logs, metrics and traces.
type signal struct {
	name string // URL path element and log/error wording
	kind pipeline.Signal
	unit string // what an item is, for messages
	// message is the protobuf message a chunk holds, for messages.
	message string
	// count counts the items of a chunk without decoding it (wirecount.go).
	count func([]byte) (int, error)
	// decode parses one chunk for splitting.
	decode func([]byte) (decoded, error)
	// fromUpstream decodes a queue item written by upstream's otlp_http
	// (pdata/xpdata/request format, or plain proto) and re-encodes it.
	fromUpstream func([]byte) (context.Context, *wireRequest, error)
	// partialSuccess returns the rejected count and message of an
	// Export<Signal>ServiceResponse. Follows otlphttpexporter@v0.165.0
	// otlp.go <signal>PartialSuccessHandler (the decoding).
	partialSuccess func(body []byte, json bool) (int64, string, error)
}

// decoded is a chunk parsed with pdata.
type decoded interface {
	items() int
	encodedLen() int
	// encodeRange encodes items [from, to) with their resource and scope.
	encodeRange(from, to int) ([]byte, error)
}

var logsSignal, metricsSignal, tracesSignal *signal

func init() {
	logsSignal = &signal{
		name: "logs", kind: pipeline.SignalLogs, unit: "log records", message: "ExportLogsServiceRequest", count: countLogRecords,
		decode: decoder(plogotlp.NewExportRequest, func(req plogotlp.ExportRequest, n int) decoded {
			return logsDecoded{ld: req.Logs(), n: n}
		}),
		fromUpstream:   upstreamDecoder(pdatareq.UnmarshalLogs, (&plog.ProtoUnmarshaler{}).UnmarshalLogs, logsFromPdata),
		partialSuccess: partialSuccessDecoder(plogotlp.NewExportResponse, plogotlp.ExportPartialSuccess.RejectedLogRecords),
	}
	metricsSignal = &signal{
		name: "metrics", kind: pipeline.SignalMetrics, unit: "data points", message: "ExportMetricsServiceRequest", count: countDataPoints,
		decode: decoder(pmetricotlp.NewExportRequest, func(req pmetricotlp.ExportRequest, n int) decoded {
			return metricsDecoded{md: req.Metrics(), n: n}
		}),
		fromUpstream:   upstreamDecoder(pdatareq.UnmarshalMetrics, (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics, metricsFromPdata),
		partialSuccess: partialSuccessDecoder(pmetricotlp.NewExportResponse, pmetricotlp.ExportPartialSuccess.RejectedDataPoints),
	}
	tracesSignal = &signal{
		name: "traces", kind: pipeline.SignalTraces, unit: "spans", message: "ExportTraceServiceRequest", count: countSpans,
		decode: decoder(ptraceotlp.NewExportRequest, func(req ptraceotlp.ExportRequest, n int) decoded {
			return tracesDecoded{td: req.Traces(), n: n}
		}),
		fromUpstream:   upstreamDecoder(pdatareq.UnmarshalTraces, (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces, tracesFromPdata),
		partialSuccess: partialSuccessDecoder(ptraceotlp.NewExportResponse, ptraceotlp.ExportPartialSuccess.RejectedSpans),
	}
}

// decoder makes a signal's decode from its Export<Signal>ServiceRequest
// constructor; wrap gets the parsed request and the chunk's length.
func decoder[R interface{ UnmarshalProto([]byte) error }](newReq func() R, wrap func(req R, n int) decoded) func([]byte) (decoded, error) {
	return func(b []byte) (decoded, error) {
		req := newReq()
		if err := req.UnmarshalProto(b); err != nil {
			return nil, err
		}
		return wrap(req, len(b)), nil
	}
}

// upstreamDecoder makes a signal's fromUpstream: unmarshal reads the
// pdata/xpdata/request format, unmarshalPlain the plain proto of items that
// are not in it.
func upstreamDecoder[T any](
	unmarshal func([]byte) (context.Context, T, error),
	unmarshalPlain func([]byte) (T, error),
	fromPdata func(T) (*wireRequest, error),
) func([]byte) (context.Context, *wireRequest, error) {
	return func(b []byte) (context.Context, *wireRequest, error) {
		ctx, data, err := unmarshal(b)
		if errors.Is(err, pdatareq.ErrInvalidFormat) {
			data, err = unmarshalPlain(b)
		}
		if err != nil {
			return ctx, nil, err
		}
		r, err := fromPdata(data)
		return ctx, r, err
	}
}

// partialSuccessDecoder makes a signal's partialSuccess from its
// Export<Signal>ServiceResponse constructor and the partial success's
// rejected-items getter.
func partialSuccessDecoder[R partialSuccessResponse[P], P interface{ ErrorMessage() string }](
	newResp func() R, rejected func(P) int64,
) func(body []byte, json bool) (int64, string, error) {
	return func(body []byte, json bool) (int64, string, error) {
		resp := newResp()
		if err := unmarshalResponse(resp, body, json); err != nil {
			return 0, "", err
		}
		ps := resp.PartialSuccess()
		return rejected(ps), ps.ErrorMessage(), nil
	}
}

// partialSuccessResponse is an Export<Signal>ServiceResponse.
type partialSuccessResponse[P any] interface {
	responseUnmarshaler
	PartialSuccess() P
}

type responseUnmarshaler interface {
	UnmarshalProto([]byte) error
	UnmarshalJSON([]byte) error
}

func unmarshalResponse(r responseUnmarshaler, body []byte, json bool) error {
	if json {
		return r.UnmarshalJSON(body)
	}
	return r.UnmarshalProto(body)
}

// The intake converters: the one encoding of a request's life, into its
// queue item (encoding.go), with upstream's encoder, so that the item is
// upstream's and the request's chunk its data field.

func logsRequest(ctx context.Context, ld plog.Logs) (*wireRequest, error) {
	return intakeRequest(ctx, logsSignal, pdatareq.MarshalLogs, ld, ld.LogRecordCount())
}

func metricsRequest(ctx context.Context, md pmetric.Metrics) (*wireRequest, error) {
	return intakeRequest(ctx, metricsSignal, pdatareq.MarshalMetrics, md, md.DataPointCount())
}

func tracesRequest(ctx context.Context, td ptrace.Traces) (*wireRequest, error) {
	return intakeRequest(ctx, tracesSignal, pdatareq.MarshalTraces, td, td.SpanCount())
}

func intakeRequest[T any](ctx context.Context, sig *signal, marshal func(context.Context, T) ([]byte, error), data T, items int) (*wireRequest, error) {
	b, err := marshal(ctx, data)
	if err != nil {
		return nil, err
	}
	l, ok := splitItem(b)
	if !ok {
		return nil, fmt.Errorf("otlp_http_wire: pdata/xpdata/request wrote a %s item of an unknown layout (%d bytes)", sig.name, len(b))
	}
	return requestFromItem(ctx, sig, b, l, items), nil
}

// The plain converters, for pieces of a split and re-encoded items.

func logsFromPdata(ld plog.Logs) (*wireRequest, error) {
	return plainRequest(logsSignal, plogotlp.NewExportRequestFromLogs(ld), ld.LogRecordCount())
}

func metricsFromPdata(md pmetric.Metrics) (*wireRequest, error) {
	return plainRequest(metricsSignal, pmetricotlp.NewExportRequestFromMetrics(md), md.DataPointCount())
}

func tracesFromPdata(td ptrace.Traces) (*wireRequest, error) {
	return plainRequest(tracesSignal, ptraceotlp.NewExportRequestFromTraces(td), td.SpanCount())
}

func plainRequest(sig *signal, req interface{ MarshalProto() ([]byte, error) }, items int) (*wireRequest, error) {
	b, err := req.MarshalProto()
	if err != nil {
		return nil, err
	}
	r := newWireRequest(sig)
	r.add(b, items)
	return r, nil
}
