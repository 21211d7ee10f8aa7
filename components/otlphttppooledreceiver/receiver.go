// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver // import "github.com/otelcol-relay/otelcol-relay/components/otlphttppooledreceiver"

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"
)

// pooledReceiver is one HTTP server for every signal of one receiver config.
// The collector calls Start and Shutdown once per signal; only the first of
// each acts.
type pooledReceiver struct {
	cfg    *Config
	set    receiver.Settings
	obsrep *receiverhelper.ObsReport
	bodies *bodyPool
	gunzip *gunzipPool
	forget func()

	nextTraces  consumer.Traces
	nextMetrics consumer.Metrics
	nextLogs    consumer.Logs

	mu       sync.Mutex
	started  bool
	stopped  bool
	server   *http.Server
	serving  sync.WaitGroup
	startErr error
}

func newReceiver(cfg *Config, set receiver.Settings, forget func()) (*pooledReceiver, error) {
	// Transport "http", as upstream's HTTP side reports: the same
	// otelcol_receiver_* series, under this receiver's ID.
	obsrep, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              "http",
		ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	return &pooledReceiver{cfg: cfg, set: set, obsrep: obsrep, bodies: newBodyPool(maxRequestBodySize(cfg)), gunzip: newGunzipPool(), forget: forget}, nil
}

// maxRequestBodySize is the bound confighttp enforces on a body: the setting,
// or confighttp's default (20 MiB, server.go) when it is 0.
func maxRequestBodySize(cfg *Config) int64 {
	if n := cfg.ServerConfig.MaxRequestBodySize; n > 0 {
		return n
	}
	return 20 << 20
}

func (r *pooledReceiver) Start(ctx context.Context, host component.Host) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return r.startErr
	}
	r.started = true
	r.startErr = r.start(ctx, host)
	return r.startErr
}

func (r *pooledReceiver) start(ctx context.Context, host component.Host) error {
	mux := http.NewServeMux()
	if r.nextTraces != nil {
		mux.Handle(string(r.cfg.TracesURLPath), r.tracesHandler())
	}
	if r.nextMetrics != nil {
		mux.Handle(string(r.cfg.MetricsURLPath), r.metricsHandler())
	}
	if r.nextLogs != nil {
		mux.Handle(string(r.cfg.LogsURLPath), r.logsHandler())
	}
	opts := []confighttp.ToServerOption{confighttp.WithErrorHandler(errorHandler)}
	if gzipEnabled(r.cfg.ServerConfig.CompressionAlgorithms) {
		// WithDecoder adds its decoder whatever the list says, so only
		// where the list has gzip.
		opts = append(opts, confighttp.WithDecoder("gzip", r.gunzip.decoder))
	}
	server, err := r.cfg.ServerConfig.ToServer(ctx, host.GetExtensions(), r.set.TelemetrySettings, mux, opts...)
	if err != nil {
		return err
	}
	ln, err := r.cfg.ServerConfig.ToListener(ctx)
	if err != nil {
		return err
	}
	r.set.Logger.Info("Starting HTTP server", zap.String("endpoint", ln.Addr().String()))
	r.server = server
	r.serving.Go(func() {
		if err := server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	})
	return nil
}

func (r *pooledReceiver) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	r.stopped = true
	r.forget()
	var err error
	if r.server != nil {
		// Requests in flight finish (their data reaches the pipeline or the
		// client gets an error) unless ctx ends first.
		err = r.server.Shutdown(ctx)
	}
	r.serving.Wait()
	return err
}
