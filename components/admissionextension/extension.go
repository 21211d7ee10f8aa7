// SPDX-License-Identifier: Apache-2.0

// Package admissionextension is the gate in front of the receivers that reference
// it: it bounds how many export requests are decoded at once and how many HTTP
// bodies are received at once, cuts uploads that stall, recycles old HTTP
// connections so new replicas get traffic, and takes the relay out of service before it stops (drain).
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
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.opentelemetry.io/collector/extension/extensionmiddleware"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcol-relay/otelcol-relay/components/admissionextension/internal/metadata"
	"github.com/otelcol-relay/otelcol-relay/components/internal/peerhandoff"
)

type admission struct {
	cfg    *Config
	logger *zap.Logger
	slots  chan struct{}
	reads  chan struct{} // HTTP requests holding a body: arriving, waiting for a slot, or in one
	ages   *connAges

	// active counts requests from their arrival to their answer, including
	// those waiting for a slot: a drain waits for it to reach zero. It is
	// raised before draining is checked, so no request slips past a drain.
	active   atomic.Int64
	draining atomic.Bool
	ready    atomic.Bool
	// drainingSince is when draining last turned on, in Unix nanoseconds
	// (DrainingSince).
	drainingSince atomic.Int64

	tel *metadata.TelemetryBuilder
	// attrs names the instance: :8888 does not show the otelcol.component.id
	// that the collector puts on the instrumentation scope.
	attrs metric.MeasurementOption

	// drainCtx ends at Shutdown, so that a /drain in progress returns.
	drainCtx    context.Context
	stopDrain   context.CancelFunc
	server      *http.Server
	drainAddr   net.Addr // where the drain endpoint listens (tests use port 0)
	serverDone  chan struct{}
	metricsHTTP *http.Client
	guard       drainGuard // who may drain (drainguard.go), and when a drain ends by itself
}

var (
	_ extension.Extension                   = (*admission)(nil)
	_ extensionmiddleware.HTTPServer        = (*admission)(nil)
	_ extensionmiddleware.GRPCServer        = (*admission)(nil)
	_ extensioncapabilities.PipelineWatcher = (*admission)(nil)
	_ peerhandoff.Drainer                   = (*admission)(nil)
)

func newAdmission(set extension.Settings, cfg *Config) (*admission, error) {
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &admission{
		cfg:         cfg,
		logger:      set.Logger,
		slots:       make(chan struct{}, cfg.MaxInFlightRequests),
		reads:       make(chan struct{}, cfg.bodyReads()),
		ages:        newConnAges(cfg.MaxConnectionAge),
		tel:         tel,
		attrs:       metric.WithAttributeSet(attribute.NewSet(attribute.String("extension", set.ID.String()))),
		drainCtx:    ctx,
		stopDrain:   cancel,
		metricsHTTP: &http.Client{Timeout: 5 * time.Second},
		guard:       drainGuard{clock: realClock{}, readFile: os.ReadFile},
	}, nil
}

func (a *admission) Start(context.Context, component.Host) error {
	a.tel.AdmissionDraining.Record(context.Background(), 0, a.attrs)
	return a.startDrainServer()
}

func (a *admission) Shutdown(ctx context.Context) error {
	a.stopDrain()
	a.stopResumeTimer()
	return a.stopDrainServer(ctx)
}

// Ready is called once every pipeline runs: /ready turns 200.
func (a *admission) Ready() error {
	a.ready.Store(true)
	return nil
}

// NotReady is called before the receivers stop (SIGTERM, or a config reload).
// Requests that arrive while they shut down are refused with a retryable status,
// never answered with an error a sender drops.
func (a *admission) NotReady() error {
	a.ready.Store(false)
	a.startDraining("the collector is shutting down", true)
	return nil
}

// DrainingSince is when this relay began refusing new export requests, and
// false while it takes them: peer_handoff hands the queues to peers from a
// while into a drain (components/internal/peerhandoff).
func (a *admission) DrainingSince() (time.Time, bool) {
	if !a.draining.Load() {
		return time.Time{}, false
	}
	return time.Unix(0, a.drainingSince.Load()), true
}

// DrainTimeout is drain::timeout: how long GET /drain waits for the queues.
func (a *admission) DrainTimeout() time.Duration { return a.cfg.Drain.Timeout }

// startDraining turns intake off; shutdown says no resume may turn it on again.
func (a *admission) startDraining(why string, shutdown bool) {
	a.guard.mu.Lock()
	defer a.guard.mu.Unlock()
	a.guard.stopping = a.guard.stopping || shutdown
	if a.draining.CompareAndSwap(false, true) {
		a.drainingSince.Store(time.Now().UnixNano())
		a.tel.AdmissionDraining.Record(context.Background(), 1, a.attrs)
		a.logger.Info("Refusing new export requests with a retryable status from now on", zap.String("reason", why))
	}
}

// enter counts a request in and reports whether it may go on; every call must be
// paired with leave.
func (a *admission) enter() bool {
	a.active.Add(1)
	return !a.draining.Load()
}

func (a *admission) leave() { a.active.Add(-1) }

// acquire takes a slot, waiting at most max_wait or until ctx ends.
func (a *admission) acquire(ctx context.Context) bool { return a.take(ctx, a.slots) }

func (a *admission) release() { <-a.slots }

// take takes one of sem's places, waiting at most max_wait or until ctx ends.
func (a *admission) take(ctx context.Context, sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
		return true
	default:
	}
	timer := time.NewTimer(a.cfg.MaxWait)
	defer timer.Stop()
	select {
	case sem <- struct{}{}:
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	a.tel.AdmissionRefusedRequests.Add(ctx, 1, a.attrs)
	return false
}

func (a *admission) busyMessage() string {
	return fmt.Sprintf("otelcol-relay: all %d request slots stayed busy for %s (admission max_in_flight_requests); retry later", a.cfg.MaxInFlightRequests, a.cfg.MaxWait)
}

const drainingMessage = "otelcol-relay: this relay is draining (scale-down, rollout or shutdown); retry, another replica takes the request"

// GetHTTPHandler runs after the server's decompression wrapper, which reads
// lazily: waiting here holds only the connection, not the decoded body.
func (a *admission) GetHTTPHandler(context.Context) (extensionmiddleware.WrapHTTPHandlerFunc, error) {
	retryAfter := a.retryAfter()
	return func(_ context.Context, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer a.leave()
			if !a.enter() {
				// Connection: close makes the sender dial again, and the
				// balancer picks a replica that is still ready.
				w.Header().Set("Connection", "close")
				w.Header().Set("Retry-After", "1")
				http.Error(w, drainingMessage, http.StatusServiceUnavailable)
				return
			}
			if a.ages.expired(r.RemoteAddr, time.Now()) {
				w.Header().Set("Connection", "close")
			}
			a.serveHTTP(w, r, next, retryAfter)
		}), nil
	}, nil
}

// GetGRPCServerOptions gates unary calls (every OTLP export is one). gRPC decodes
// the message before any interceptor runs, so here the slots bound how many
// requests are processed at once, not how many are decoded: each decoded message
// is bounded by max_recv_msg_size_mib. fluent-bit, the main sender, uses HTTP.
// gRPC connections are recycled by the receiver's own
// keepalive::server_parameters::max_connection_age.
func (a *admission) GetGRPCServerOptions(context.Context) ([]grpc.ServerOption, error) {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(a.unary)}, nil
}

func (a *admission) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	defer a.leave()
	if !a.enter() {
		return nil, status.Error(codes.Unavailable, drainingMessage)
	}
	if !a.acquire(ctx) {
		return nil, status.Error(codes.Unavailable, a.busyMessage())
	}
	defer a.release()
	return handler(ctx, req)
}
