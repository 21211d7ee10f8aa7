// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter/internal/metadata"
)

// NewFactory returns the otlp_http_wire exporter factory.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithLogs(createLogs, metadata.LogsStability),
		exporter.WithMetrics(createMetrics, metadata.MetricsStability),
		exporter.WithTraces(createTraces, metadata.TracesStability),
	)
}

// createDefaultConfig is otlp_http's default configuration. Follows
// otlphttpexporter@v0.165.0 factory.go createDefaultConfig.
func createDefaultConfig() component.Config {
	clientConfig := confighttp.NewDefaultClientConfig()
	clientConfig.Timeout = 30 * time.Second
	clientConfig.Compression = configcompression.TypeGzip
	clientConfig.WriteBufferSize = 512 * 1024
	return &Config{
		ClientConfig: clientConfig,
		QueueConfig:  configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
		RetryConfig:  configretry.NewDefaultBackOffConfig(),
		Encoding:     "proto",
	}
}

// options follows the exporterhelper options of otlphttpexporter@v0.165.0
// factory.go createLogs/createMetrics/createTraces, with the request-based
// queue in place of WithQueue.
func options(cfg *Config, e *wireExporter, u *url.URL, enc exporterhelper.QueueBatchEncoding[xexporterhelper.Request]) []exporterhelper.Option {
	return []exporterhelper.Option{
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		// the http.Client timeout applies, as in otlp_http
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{Timeout: 0}),
		exporterhelper.WithRetry(cfg.RetryConfig),
		// ReferenceCounter stays nil: a wireRequest holds no pooled pdata
		// (the queue checks for nil before using it).
		xexporterhelper.WithQueueBatch(cfg.QueueConfig, xexporterhelper.QueueBatchSettings{Encoding: enc}),
		exporterhelper.WithAttrs(endpointAttributes(u)...),
	}
}

// endpointAttributes follows otlphttpexporter@v0.165.0 factory.go
// endpointAttributes.
func endpointAttributes(u *url.URL) []attribute.KeyValue {
	out := []attribute.KeyValue{attribute.String("server.address", u.Hostname())}
	if u.Path != "" {
		out = append(out, attribute.String("url.path", u.Path))
	}
	if port, err := strconv.Atoi(u.Port()); err == nil {
		out = append(out, attribute.Int("server.port", port))
	}
	return out
}

func createLogs(ctx context.Context, set exporter.Settings, c component.Config) (exporter.Logs, error) {
	return newLogs(ctx, set, c.(*Config), nil)
}

// newLogs is createLogs with the queue's encoding as a parameter (nil: this
// release's), so that a test can queue items in an earlier release's format.
func newLogs(ctx context.Context, set exporter.Settings, cfg *Config, enc exporterhelper.QueueBatchEncoding[xexporterhelper.Request]) (exporter.Logs, error) {
	e, opts, err := newSignalExporter(cfg, set, logsSignal, cfg.LogsEndpoint, enc)
	if err != nil {
		return nil, err
	}
	exp, err := xexporterhelper.NewLogsRequest(ctx, set, converter(logsRequest), e.push, opts...)
	if err != nil {
		return nil, err
	}
	e.offer = func(ctx context.Context) error { return exp.ConsumeLogs(ctx, plog.NewLogs()) }
	return exp, nil
}

func createMetrics(ctx context.Context, set exporter.Settings, c component.Config) (exporter.Metrics, error) {
	cfg := c.(*Config)
	e, opts, err := newSignalExporter(cfg, set, metricsSignal, cfg.MetricsEndpoint, nil)
	if err != nil {
		return nil, err
	}
	exp, err := xexporterhelper.NewMetricsRequest(ctx, set, converter(metricsRequest), e.push, opts...)
	if err != nil {
		return nil, err
	}
	e.offer = func(ctx context.Context) error { return exp.ConsumeMetrics(ctx, pmetric.NewMetrics()) }
	return exp, nil
}

func createTraces(ctx context.Context, set exporter.Settings, c component.Config) (exporter.Traces, error) {
	cfg := c.(*Config)
	e, opts, err := newSignalExporter(cfg, set, tracesSignal, cfg.TracesEndpoint, nil)
	if err != nil {
		return nil, err
	}
	exp, err := xexporterhelper.NewTracesRequest(ctx, set, converter(tracesRequest), e.push, opts...)
	if err != nil {
		return nil, err
	}
	e.offer = func(ctx context.Context) error { return exp.ConsumeTraces(ctx, ptrace.NewTraces()) }
	return exp, nil
}

// newSignalExporter is the part of the create functions that does not depend
// on the signal's pdata type. endpoint is the signal's <signal>_endpoint; a
// nil enc is this release's queue encoding.
func newSignalExporter(cfg *Config, set exporter.Settings, sig *signal, endpoint string, enc exporterhelper.QueueBatchEncoding[xexporterhelper.Request]) (*wireExporter, []exporterhelper.Option, error) {
	u, err := cfg.signalURL(endpoint, sig.name)
	if err != nil {
		return nil, nil, err
	}
	e := newWireExporter(cfg, set, sig, u)
	if enc == nil {
		enc = queueEncoding{sig: sig, handoff: &e.handoff}
	}
	return e, options(cfg, e, u, enc), nil
}

// converter adapts an intake converter to exporterhelper's, which returns
// the Request interface rather than *wireRequest. A request a peer handed
// over (handoffpeer.go) is in ctx, and the data is empty: it is queued as
// it came.
func converter[T any](toRequest func(context.Context, T) (*wireRequest, error)) xexporterhelper.RequestConverterFunc[T] {
	return func(ctx context.Context, data T) (xexporterhelper.Request, error) {
		if r, ok := ctx.Value(handedOverKey{}).(*wireRequest); ok {
			return r, nil
		}
		return toRequest(ctx, data)
	}
}
