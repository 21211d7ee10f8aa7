// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/status"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"

	"github.com/otelcol-relay/otelcol-relay/components/internal/handoff"
	"github.com/otelcol-relay/otelcol-relay/components/internal/otlpstatus"
	"github.com/otelcol-relay/otelcol-relay/components/internal/peerhandoff"
)

// Follows otlphttpexporter@v0.165.0 otlp.go: its constants.
const (
	headerRetryAfter         = "Retry-After"
	maxHTTPResponseReadBytes = 64 * 1024
	protobufContentType      = "application/x-protobuf"
	jsonContentType          = "application/json"
)

// wireExporter sends wireRequests; one per signal instance.
type wireExporter struct {
	cfg       *Config
	sig       *signal
	url       string
	client    *http.Client
	logger    *zap.Logger
	settings  component.TelemetrySettings
	userAgent string
	// gzip compresses bodies when compression is gzip; nil otherwise (then
	// confighttp's round tripper applies the configured compression).
	gzip *gzipCompressor
	// handoff is the queue storage's, when it takes items over (start).
	handoff atomic.Pointer[handoff.Registry]

	// id names the exporter to peers (handoffpeer.go).
	id component.ID
	// offer queues a request a peer handed over (put in its ctx) through the
	// exporter's own queue; set by the create function.
	offer func(ctx context.Context) error
	// peers is the peer_handoff extension, when the host has one (start).
	peers      peerhandoff.Handoff
	unregister func()
}

// newWireExporter follows otlphttpexporter@v0.165.0 otlp.go newExporter
// (the User-Agent).
func newWireExporter(cfg *Config, set exporter.Settings, sig *signal, u *url.URL) *wireExporter {
	return &wireExporter{
		cfg:       cfg,
		sig:       sig,
		url:       u.String(),
		id:        set.ID,
		logger:    set.Logger,
		settings:  set.TelemetrySettings,
		userAgent: fmt.Sprintf("%s/%s (%s/%s)", set.BuildInfo.Description, set.BuildInfo.Version, runtime.GOOS, runtime.GOARCH),
	}
}

// start builds the client with the host's extensions (auth, middlewares such
// as certwatch). Follows otlphttpexporter@v0.165.0 otlp.go start.
func (e *wireExporter) start(ctx context.Context, host component.Host) error {
	if e.cfg.QueueConfig.HasValue() {
		if id := e.cfg.QueueConfig.Get().StorageID; id != nil {
			if p, ok := host.GetExtensions()[*id].(handoff.Provider); ok {
				e.handoff.Store(p.Handoff())
			}
		}
	}
	if err := e.startHandoff(host); err != nil {
		return err
	}
	if e.cfg.ClientConfig.Compression == configcompression.TypeGzip {
		gz, err := newGzipCompressor(e.cfg.ClientConfig.CompressionParams.Level, e.concurrency())
		if err != nil {
			return err
		}
		e.gzip = gz
	}
	client, err := e.cfg.ClientConfig.ToClient(ctx, host.GetExtensions(), e.settings)
	if err != nil {
		return err
	}
	e.client = client
	return nil
}

// push POSTs the request's chunks, concatenated on the wire, not in memory
// (or gzip-compressed, see gzipCompressor).
//
// Follows otlphttpexporter@v0.165.0 otlp.go export, up to the status
// handling (handleResponse), with one deliberate difference: a transport
// error names the URL redacted (upstream writes req.URL.String(), userinfo
// included, into an error that is logged).
func (e *wireExporter) push(ctx context.Context, req xexporterhelper.Request) error {
	r, ok := req.(*wireRequest)
	if !ok {
		return consumererror.NewPermanent(fmt.Errorf("otlp_http_wire: cannot send a %T", req))
	}
	if e.peers != nil && e.peers.Active() {
		return e.handOff(ctx, r)
	}
	hreq, err := e.newRequest(ctx, r)
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", protobufContentType)
	hreq.Header.Set("User-Agent", e.userAgent)

	resp, err := e.client.Do(hreq)
	if err != nil {
		if urlErr, ok := errors.AsType[*url.Error](err); ok {
			urlErr.URL = hreq.URL.Redacted()
		}
		return fmt.Errorf("failed to make an HTTP request: %w", err)
	}
	defer func() {
		_, _ = io.CopyN(io.Discard, resp.Body, maxHTTPResponseReadBytes)
		_ = resp.Body.Close()
	}()
	return e.handleResponse(hreq, resp)
}

// newRequest follows otlphttpexporter@v0.165.0 otlp.go export's
// http.NewRequestWithContext (an error is permanent); the body is the
// request's chunks, and with gzip their compression (confighttp's
// compressRoundTripper in upstream).
func (e *wireExporter) newRequest(ctx context.Context, r *wireRequest) (*http.Request, error) {
	if e.gzip != nil && r.bytes > 0 {
		z, err := e.gzip.compress(r.chunks, r.bytes)
		if err != nil {
			return nil, fmt.Errorf("otlp_http_wire: compressing a %s request: %w", e.sig.name, err)
		}
		// A bytes.Reader body gets ContentLength and GetBody (redirects,
		// retried connections) from NewRequest; z is never written again.
		hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(z))
		if err != nil {
			return nil, consumererror.NewPermanent(err)
		}
		// Set, so that confighttp's round tripper does not compress again.
		hreq.Header.Set("Content-Encoding", string(configcompression.TypeGzip))
		return hreq, nil
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, http.NoBody)
	if err != nil {
		return nil, consumererror.NewPermanent(err)
	}
	if r.bytes > 0 {
		body := func() io.ReadCloser {
			bufs := make(net.Buffers, len(r.chunks))
			copy(bufs, r.chunks) // net.Buffers.Read consumes its slice
			return io.NopCloser(&bufs)
		}
		hreq.Body = body()
		hreq.GetBody = func() (io.ReadCloser, error) { return body(), nil }
	}
	hreq.ContentLength = int64(r.bytes)
	return hreq, nil
}

// handleResponse is otlp_http's status handling: 2xx with an optional partial
// success, 429/502/503/504 retryable (Retry-After honoured for 429/503),
// everything else permanent.
//
// Follows otlphttpexporter@v0.165.0 otlp.go export (from "if
// resp.StatusCode >= 200"), isRetryableStatusCode,
// handlePartialSuccessResponse and the <signal>PartialSuccessHandler
// functions (their error and log wording). TestResponsesAsOTLPHTTP runs both
// exporters against the same answers: run it after an upgrade.
func (e *wireExporter) handleResponse(hreq *http.Request, resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		body, err := readResponseBody(resp)
		if err != nil {
			return consumererror.NewPermanent(err)
		}
		if body == nil {
			return nil
		}
		var rejected int64
		var msg string
		switch resp.Header.Get("Content-Type") {
		case protobufContentType:
			if rejected, msg, err = e.sig.partialSuccess(body, false); err != nil {
				return consumererror.NewPermanent(fmt.Errorf("error parsing protobuf response: %w", err))
			}
		case jsonContentType:
			if rejected, msg, err = e.sig.partialSuccess(body, true); err != nil {
				return consumererror.NewPermanent(fmt.Errorf("error parsing json response: %w", err))
			}
		default:
			return nil
		}
		if msg != "" || rejected != 0 {
			e.logger.Warn("Partial success response", zap.String("message", msg), zap.Int64("dropped_"+e.sig.unitKey(), rejected))
		}
		return nil
	}

	destURL := hreq.URL.Redacted()
	if resp.Request != nil && resp.Request.URL != nil {
		destURL = resp.Request.URL.Redacted()
	}
	errString := fmt.Sprintf("error exporting items, request to %s responded with HTTP Status Code %d", destURL, resp.StatusCode)
	if st := readResponseStatus(resp); st != nil {
		errString = fmt.Sprintf("error exporting items, request to %s responded with HTTP Status Code %d, Message=%s, Details=%v",
			destURL, resp.StatusCode, st.Message, st.Details)
	}
	formatted := grpcstatus.New(otlpstatus.FromHTTP(resp.StatusCode), errString).Err()

	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		values := resp.Header.Values(headerRetryAfter)
		if len(values) == 0 {
			return formatted
		}
		if seconds, err := strconv.Atoi(values[0]); err == nil {
			return exporterhelper.NewThrottleRetry(formatted, time.Duration(seconds)*time.Second)
		}
		if date, err := time.Parse(time.RFC1123, values[0]); err == nil {
			return exporterhelper.NewThrottleRetry(formatted, time.Until(date))
		}
		return formatted
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return formatted
	default:
		return consumererror.NewPermanent(formatted)
	}
}

// unitKey follows the dropped_* log fields of otlphttpexporter@v0.165.0
// otlp.go's <signal>PartialSuccessHandler functions.
func (s *signal) unitKey() string {
	switch s {
	case logsSignal:
		return "log_records"
	case metricsSignal:
		return "data_points"
	default:
		return "spans"
	}
}

// readResponseBody follows otlphttpexporter@v0.165.0 otlp.go readResponseBody.
func readResponseBody(resp *http.Response) ([]byte, error) {
	if resp.ContentLength == 0 {
		return nil, nil
	}
	maxRead := resp.ContentLength
	if maxRead == -1 || maxRead > maxHTTPResponseReadBytes {
		maxRead = maxHTTPResponseReadBytes
	}
	b := make([]byte, maxRead)
	n, err := io.ReadFull(resp.Body, b)
	if n == 0 && (err == nil || errors.Is(err, io.EOF)) {
		return nil, nil
	}
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	return b[:n], nil
}

// readResponseStatus decodes the google.rpc.Status an OTLP server returns
// with a 4xx/5xx; nil if there is none. Follows otlphttpexporter@v0.165.0
// otlp.go readResponseStatus.
func readResponseStatus(resp *http.Response) *status.Status {
	if resp.StatusCode < 400 || resp.StatusCode > 599 {
		return nil
	}
	b, err := readResponseBody(resp)
	if err != nil {
		return nil
	}
	st := &status.Status{}
	if err := proto.Unmarshal(b, st); err != nil {
		return nil
	}
	return st
}

// concurrency is how many exports may compress at once: the sending queue's
// consumers, or one without a queue (then callers export one at a time, a
// pipeline's fan-out aside, and a writer more is simply made).
func (e *wireExporter) concurrency() int {
	if e.cfg.QueueConfig.HasValue() {
		return e.cfg.QueueConfig.Get().NumConsumers
	}
	return 1
}
