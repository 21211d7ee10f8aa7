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
)

// signal holds what differs between logs, metrics and traces.
type signal struct {
	name string // URL path element and log/error wording
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
		name: "logs", unit: "log records", message: "ExportLogsServiceRequest", count: countLogRecords,
		decode: func(b []byte) (decoded, error) {
			req := plogotlp.NewExportRequest()
			if err := req.UnmarshalProto(b); err != nil {
				return nil, err
			}
			return logsDecoded{ld: req.Logs(), n: len(b)}, nil
		},
		fromUpstream: func(b []byte) (context.Context, *wireRequest, error) {
			ctx, ld, err := pdatareq.UnmarshalLogs(b)
			if errors.Is(err, pdatareq.ErrInvalidFormat) {
				ld, err = (&plog.ProtoUnmarshaler{}).UnmarshalLogs(b)
			}
			if err != nil {
				return ctx, nil, err
			}
			r, err := logsFromPdata(ld)
			return ctx, r, err
		},
		partialSuccess: func(body []byte, json bool) (int64, string, error) {
			resp := plogotlp.NewExportResponse()
			if err := unmarshalResponse(resp, body, json); err != nil {
				return 0, "", err
			}
			return resp.PartialSuccess().RejectedLogRecords(), resp.PartialSuccess().ErrorMessage(), nil
		},
	}
	metricsSignal = &signal{
		name: "metrics", unit: "data points", message: "ExportMetricsServiceRequest", count: countDataPoints,
		decode: func(b []byte) (decoded, error) {
			req := pmetricotlp.NewExportRequest()
			if err := req.UnmarshalProto(b); err != nil {
				return nil, err
			}
			return metricsDecoded{md: req.Metrics(), n: len(b)}, nil
		},
		fromUpstream: func(b []byte) (context.Context, *wireRequest, error) {
			ctx, md, err := pdatareq.UnmarshalMetrics(b)
			if errors.Is(err, pdatareq.ErrInvalidFormat) {
				md, err = (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(b)
			}
			if err != nil {
				return ctx, nil, err
			}
			r, err := metricsFromPdata(md)
			return ctx, r, err
		},
		partialSuccess: func(body []byte, json bool) (int64, string, error) {
			resp := pmetricotlp.NewExportResponse()
			if err := unmarshalResponse(resp, body, json); err != nil {
				return 0, "", err
			}
			return resp.PartialSuccess().RejectedDataPoints(), resp.PartialSuccess().ErrorMessage(), nil
		},
	}
	tracesSignal = &signal{
		name: "traces", unit: "spans", message: "ExportTraceServiceRequest", count: countSpans,
		decode: func(b []byte) (decoded, error) {
			req := ptraceotlp.NewExportRequest()
			if err := req.UnmarshalProto(b); err != nil {
				return nil, err
			}
			return tracesDecoded{td: req.Traces(), n: len(b)}, nil
		},
		fromUpstream: func(b []byte) (context.Context, *wireRequest, error) {
			ctx, td, err := pdatareq.UnmarshalTraces(b)
			if errors.Is(err, pdatareq.ErrInvalidFormat) {
				td, err = (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b)
			}
			if err != nil {
				return ctx, nil, err
			}
			r, err := tracesFromPdata(td)
			return ctx, r, err
		},
		partialSuccess: func(body []byte, json bool) (int64, string, error) {
			resp := ptraceotlp.NewExportResponse()
			if err := unmarshalResponse(resp, body, json); err != nil {
				return 0, "", err
			}
			return resp.PartialSuccess().RejectedSpans(), resp.PartialSuccess().ErrorMessage(), nil
		},
	}
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
	b, err := pdatareq.MarshalLogs(ctx, ld)
	if err != nil {
		return nil, err
	}
	return intakeRequest(ctx, logsSignal, b, ld.LogRecordCount())
}

func metricsRequest(ctx context.Context, md pmetric.Metrics) (*wireRequest, error) {
	b, err := pdatareq.MarshalMetrics(ctx, md)
	if err != nil {
		return nil, err
	}
	return intakeRequest(ctx, metricsSignal, b, md.DataPointCount())
}

func tracesRequest(ctx context.Context, td ptrace.Traces) (*wireRequest, error) {
	b, err := pdatareq.MarshalTraces(ctx, td)
	if err != nil {
		return nil, err
	}
	return intakeRequest(ctx, tracesSignal, b, td.SpanCount())
}

func intakeRequest(ctx context.Context, sig *signal, b []byte, items int) (*wireRequest, error) {
	l, ok := splitItem(b)
	if !ok {
		return nil, fmt.Errorf("otlp_http_wire: pdata/xpdata/request wrote a %s item of an unknown layout (%d bytes)", sig.name, len(b))
	}
	return requestFromItem(ctx, sig, b, l, items), nil
}

// The plain converters, for pieces of a split and re-encoded items.

func logsFromPdata(ld plog.Logs) (*wireRequest, error) {
	b, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		return nil, err
	}
	r := newWireRequest(logsSignal)
	r.add(b, ld.LogRecordCount())
	return r, nil
}

func metricsFromPdata(md pmetric.Metrics) (*wireRequest, error) {
	b, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		return nil, err
	}
	r := newWireRequest(metricsSignal)
	r.add(b, md.DataPointCount())
	return r, nil
}

func tracesFromPdata(td ptrace.Traces) (*wireRequest, error) {
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		return nil, err
	}
	r := newWireRequest(tracesSignal)
	r.add(b, td.SpanCount())
	return r, nil
}
