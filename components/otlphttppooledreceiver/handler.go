// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver // import "github.com/otelcol-relay/otelcol-relay/components/otlphttppooledreceiver"

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelcol-relay/otelcol-relay/components/internal/otlpstatus"
)

// The HTTP semantics below are upstream otlpreceiver v0.165.0's (otlphttp.go,
// internal/errors, internal/statusutil), which are not importable;
// TestSameResponsesAsUpstream sends both receivers the same requests.

const (
	pbContentType   = "application/x-protobuf"
	jsonContentType = "application/json"
	// upstream counts JSON requests under this format too.
	dataFormat = "protobuf"
)

var fallbackMsg = []byte(`{"code": 13, "message": "failed to marshal error message"}`)

type encoding bool

const (
	protoEncoding encoding = false
	jsonEncoding  encoding = true
)

func (e encoding) contentType() string {
	if e == jsonEncoding {
		return jsonContentType
	}
	return pbContentType
}

func (e encoding) marshalStatus(s *spb.Status) ([]byte, error) {
	if e == jsonEncoding {
		return protojson.Marshal(s)
	}
	return proto.Marshal(s)
}

// request and response are what pdata's Export*Service messages share.
type request interface {
	UnmarshalProto([]byte) error
	UnmarshalJSON([]byte) error
}

type response interface {
	MarshalProto() ([]byte, error)
	MarshalJSON() ([]byte, error)
}

// signalHandler serves one signal: decode the body from a pooled buffer into a
// new request, hand it to export, answer with resp or the error's status.
func signalHandler[Req request, Resp response](bodies *bodyPool, newReq func() Req, resp Resp, export func(context.Context, Req) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		enc, ok := readContentType(w, r)
		if !ok {
			return
		}
		req := newReq()
		unmarshal := req.UnmarshalProto
		if enc == jsonEncoding {
			unmarshal = req.UnmarshalJSON
		}
		if err := bodies.decode(r.Body, r.ContentLength, unmarshal); err != nil {
			writeError(w, enc, err, http.StatusBadRequest)
			return
		}
		if err := export(r.Context(), req); err != nil {
			writeError(w, enc, statusFromConsumerError(err), http.StatusInternalServerError)
			return
		}
		marshal := resp.MarshalProto
		if enc == jsonEncoding {
			marshal = resp.MarshalJSON
		}
		msg, err := marshal()
		if err != nil {
			writeError(w, enc, err, http.StatusInternalServerError)
			return
		}
		writeResponse(w, enc.contentType(), http.StatusOK, msg)
	})
}

func (r *pooledReceiver) logsHandler() http.Handler {
	return signalHandler(r.bodies, plogotlp.NewExportRequest, plogotlp.NewExportResponse(), func(ctx context.Context, req plogotlp.ExportRequest) error {
		ld := req.Logs()
		return consume(ctx, ld, ld.LogRecordCount(), r.obsrep.StartLogsOp, r.nextLogs.ConsumeLogs, r.obsrep.EndLogsOp)
	})
}

func (r *pooledReceiver) metricsHandler() http.Handler {
	return signalHandler(r.bodies, pmetricotlp.NewExportRequest, pmetricotlp.NewExportResponse(), func(ctx context.Context, req pmetricotlp.ExportRequest) error {
		md := req.Metrics()
		return consume(ctx, md, md.DataPointCount(), r.obsrep.StartMetricsOp, r.nextMetrics.ConsumeMetrics, r.obsrep.EndMetricsOp)
	})
}

func (r *pooledReceiver) tracesHandler() http.Handler {
	return signalHandler(r.bodies, ptraceotlp.NewExportRequest, ptraceotlp.NewExportResponse(), func(ctx context.Context, req ptraceotlp.ExportRequest) error {
		td := req.Traces()
		return consume(ctx, td, td.SpanCount(), r.obsrep.StartTracesOp, r.nextTraces.ConsumeTraces, r.obsrep.EndTracesOp)
	})
}

// consume passes n items of data to next between obsrep's start and end. As in
// upstream, an empty request reaches neither the pipeline nor the counts.
func consume[T any](ctx context.Context, data T, n int, start func(context.Context) context.Context, next func(context.Context, T) error, end func(context.Context, string, int, error)) error {
	if n == 0 {
		return nil
	}
	ctx = start(ctx)
	err := next(ctx, data)
	end(ctx, dataFormat, n, err)
	return err
}

func readContentType(w http.ResponseWriter, r *http.Request) (encoding, bool) {
	if r.Method != http.MethodPost {
		writeResponse(w, "text/plain", http.StatusMethodNotAllowed,
			fmt.Appendf(nil, "%v method not allowed, supported: [POST]", http.StatusMethodNotAllowed))
		return protoEncoding, false
	}
	switch mediaType(r.Header.Get("Content-Type")) {
	case pbContentType:
		return protoEncoding, true
	case jsonContentType:
		return jsonEncoding, true
	default:
		writeResponse(w, "text/plain", http.StatusUnsupportedMediaType,
			fmt.Appendf(nil, "%v unsupported media type, supported: [%s, %s]", http.StatusUnsupportedMediaType, jsonContentType, pbContentType))
		return protoEncoding, false
	}
}

func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return mt
}

// statusFromConsumerError: retryable unless the pipeline said permanent, so a
// full queue or memory_limiter's refusal becomes 503 and the sender retries.
func statusFromConsumerError(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codes.Unavailable
	if consumererror.IsPermanent(err) {
		code = codes.Internal
	}
	return status.New(code, err.Error()).Err()
}

// writeError answers with an rpc.Status, as the OTLP specification requires.
func writeError(w http.ResponseWriter, enc encoding, err error, statusCode int) {
	s, ok := status.FromError(err)
	if ok {
		statusCode = otlpstatus.ToHTTP(s.Code())
	} else {
		s = status.New(otlpstatus.FromHTTP(statusCode), err.Error())
	}
	writeStatus(w, enc, statusCode, s)
}

// errorHandler answers confighttp's own refusals (a bad Content-Encoding, a
// body over max_request_body_size, ...) in the request's encoding.
func errorHandler(w http.ResponseWriter, r *http.Request, msg string, statusCode int) {
	s := status.New(otlpstatus.FromHTTP(statusCode), msg)
	enc := jsonEncoding
	if mediaType(r.Header.Get("Content-Type")) == pbContentType {
		enc = protoEncoding
	}
	writeStatus(w, enc, statusCode, s)
}

func writeStatus(w http.ResponseWriter, enc encoding, statusCode int, s *status.Status) {
	if statusCode == http.StatusTooManyRequests || statusCode == http.StatusServiceUnavailable {
		for _, d := range s.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				w.Header().Set("Retry-After", strconv.FormatInt(int64(ri.GetRetryDelay().AsDuration()/time.Second), 10))
				break
			}
		}
	}
	msg, err := enc.marshalStatus(s.Proto())
	if err != nil {
		writeResponse(w, jsonContentType, http.StatusInternalServerError, fallbackMsg)
		return
	}
	writeResponse(w, enc.contentType(), statusCode, msg)
}

func writeResponse(w http.ResponseWriter, contentType string, statusCode int, msg []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(statusCode)
	_, _ = w.Write(msg) //nolint:gosec // G705: an OTLP status in the protobuf or JSON Content-Type set above, never HTML; the client may be gone, nothing else to tell it
}
