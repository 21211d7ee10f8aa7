// Package admissionextension bounds how many export requests the receivers that
// reference it read and decode at once.
//
// memory_limiter refuses data only after a receiver has read and decoded it, and
// checks memory once a check_interval. A burst of large requests (32 fluent-bit
// workers sending 4 MiB chunks) is decoded all at once, between two checks, and a
// 512 MiB container is OOM-killed with everything it had accepted but not yet
// persisted. A fixed number of decoding slots bounds that memory; a request that
// finds no slot within max_wait gets a retryable refusal, which fluent-bit and the
// OTLP exporters retry.
package admissionextension

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensionmiddleware"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type admission struct {
	cfg     *Config
	slots   chan struct{}
	refused metric.Int64Counter
	attrs   metric.MeasurementOption
}

var (
	_ extension.Extension            = (*admission)(nil)
	_ extensionmiddleware.HTTPServer = (*admission)(nil)
	_ extensionmiddleware.GRPCServer = (*admission)(nil)
)

func newAdmission(set extension.Settings, cfg *Config) (*admission, error) {
	refused, err := set.MeterProvider.Meter("github.com/otelcol-relay/otelcol-relay/components/admissionextension").Int64Counter(
		"otelcol_admission_refused_requests",
		metric.WithDescription("Export requests refused because every decoding slot stayed busy for max_wait."),
		metric.WithUnit("{request}"))
	if err != nil {
		return nil, err
	}
	return &admission{
		cfg:     cfg,
		slots:   make(chan struct{}, cfg.MaxInFlightRequests),
		refused: refused,
		attrs:   metric.WithAttributes(attribute.String("extension", set.ID.String())),
	}, nil
}

func (*admission) Start(context.Context, component.Host) error { return nil }

func (*admission) Shutdown(context.Context) error { return nil }

// acquire takes a slot, waiting at most max_wait or until ctx ends.
func (a *admission) acquire(ctx context.Context) bool {
	select {
	case a.slots <- struct{}{}:
		return true
	default:
	}
	timer := time.NewTimer(a.cfg.MaxWait)
	defer timer.Stop()
	select {
	case a.slots <- struct{}{}:
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	a.refused.Add(ctx, 1, a.attrs)
	return false
}

func (a *admission) release() { <-a.slots }

func (a *admission) busyMessage() string {
	return fmt.Sprintf("otelcol-relay: all %d request slots stayed busy for %s (admission max_in_flight_requests); retry later", a.cfg.MaxInFlightRequests, a.cfg.MaxWait)
}

// GetHTTPHandler runs after the server's decompression wrapper, which reads
// lazily: waiting here holds only the connection, not the decoded body.
func (a *admission) GetHTTPHandler(context.Context) (extensionmiddleware.WrapHTTPHandlerFunc, error) {
	retryAfter := strconv.Itoa(max(1, int(a.cfg.MaxWait.Seconds())))
	return func(_ context.Context, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !a.acquire(r.Context()) {
				w.Header().Set("Retry-After", retryAfter)
				http.Error(w, a.busyMessage(), http.StatusServiceUnavailable)
				return
			}
			defer a.release()
			next.ServeHTTP(w, r)
		}), nil
	}, nil
}

// GetGRPCServerOptions gates unary calls (every OTLP export is one). gRPC decodes
// the message before any interceptor runs, so here the slots bound how many
// requests are processed at once, not how many are decoded: each decoded message
// is bounded by max_recv_msg_size_mib. fluent-bit, the main sender, uses HTTP.
func (a *admission) GetGRPCServerOptions(context.Context) ([]grpc.ServerOption, error) {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(a.unary)}, nil
}

func (a *admission) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !a.acquire(ctx) {
		return nil, status.Error(codes.Unavailable, a.busyMessage())
	}
	defer a.release()
	return handler(ctx, req)
}
