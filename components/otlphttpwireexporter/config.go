// SPDX-License-Identifier: Apache-2.0

// Package otlphttpwireexporter is an OTLP/HTTP exporter that encodes each request
// once, at intake, to its OTLP protobuf bytes and from then on only moves bytes:
// the persistent queue stores them, batching concatenates them and they are the
// HTTP body. Queueing, persistence, retries and the exporter metrics are
// upstream's request-based exporterhelper.
package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"errors"
	"fmt"
	"net/url"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Config has otlp_http's fields and names, so that an otlp_http configuration
// moves over by changing the exporter type. Follows otlphttpexporter@v0.165.0
// config.go Config (TestOTLPHTTPConfigMovesOver checks the fields).
type Config struct {
	ClientConfig confighttp.ClientConfig                                  `mapstructure:",squash"`
	QueueConfig  configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	RetryConfig  configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`

	// Per-signal URLs; when empty, endpoint + "/v1/<signal>".
	TracesEndpoint  string `mapstructure:"traces_endpoint"`
	MetricsEndpoint string `mapstructure:"metrics_endpoint"`
	LogsEndpoint    string `mapstructure:"logs_endpoint"`
	// ProfilesEndpoint is accepted only to refuse it with a clear error:
	// this exporter has no profiles signal.
	ProfilesEndpoint string `mapstructure:"profiles_endpoint"`

	// Encoding is accepted for compatibility with otlp_http; only "proto".
	Encoding string `mapstructure:"encoding"`
}

var _ component.Config = (*Config)(nil)

// Validate checks the exporter configuration. Follows
// otlphttpexporter@v0.165.0 config.go Validate, and refuses what this
// exporter does not do (json, profiles).
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.ClientConfig.Endpoint == "" && cfg.TracesEndpoint == "" && cfg.MetricsEndpoint == "" && cfg.LogsEndpoint == "" {
		errs = append(errs, errors.New("at least one endpoint must be specified (endpoint, logs_endpoint, metrics_endpoint or traces_endpoint)"))
	}
	switch cfg.Encoding {
	case "", "proto":
	case "json":
		errs = append(errs, errors.New(`encoding: "json" is not supported: otlp_http_wire sends the OTLP protobuf bytes it encoded at intake; use otlp_http for JSON`))
	default:
		errs = append(errs, fmt.Errorf("encoding: invalid value %q (only \"proto\")", cfg.Encoding))
	}
	// confighttp refuses these too, without naming the field; the exporter
	// compresses gzip itself (gzip.go), so say which field and values.
	if lvl := cfg.ClientConfig.CompressionParams.Level; cfg.ClientConfig.Compression == configcompression.TypeGzip && (lvl < -2 || lvl > 9) {
		errs = append(errs, fmt.Errorf("compression_params.level: %d is not a gzip level (1 to 9, -1 for the default, -2 for Huffman only)", lvl))
	}
	if cfg.ProfilesEndpoint != "" {
		errs = append(errs, errors.New("profiles_endpoint: otlp_http_wire exports logs, metrics and traces only; use otlp_http for profiles"))
	}
	for name, v := range map[string]string{"endpoint": cfg.ClientConfig.Endpoint, "logs_endpoint": cfg.LogsEndpoint, "metrics_endpoint": cfg.MetricsEndpoint, "traces_endpoint": cfg.TracesEndpoint} {
		if v == "" {
			continue
		}
		if _, err := url.Parse(v); err != nil {
			errs = append(errs, fmt.Errorf("%s must be a valid URL: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// signalURL follows otlphttpexporter@v0.165.0 factory.go composeSignalURL
// (signal version v1).
func (cfg *Config) signalURL(override, signal string) (*url.URL, error) {
	switch {
	case override != "":
		u, err := url.Parse(override)
		if err != nil {
			return nil, fmt.Errorf("%s_endpoint must be a valid URL", signal)
		}
		return u, nil
	case cfg.ClientConfig.Endpoint == "":
		return nil, fmt.Errorf("either endpoint or %s_endpoint must be specified", signal)
	case cfg.ClientConfig.Endpoint[len(cfg.ClientConfig.Endpoint)-1] == '/':
		return url.Parse(cfg.ClientConfig.Endpoint + "v1/" + signal)
	default:
		return url.Parse(cfg.ClientConfig.Endpoint + "/v1/" + signal)
	}
}
