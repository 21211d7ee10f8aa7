// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver // import "github.com/otelcol-relay/otelcol-relay/components/otlphttppooledreceiver"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
)

// Config is upstream otlp receiver's `protocols.http` block, at the top level:
// the same type, so the same fields, defaults and URL path sanitizing, and a
// config moves between the two receivers unchanged.
type Config struct {
	otlpreceiver.HTTPConfig `mapstructure:",squash"`
}

var _ component.Config = (*Config)(nil)

// createDefaultConfig mirrors upstream's HTTP defaults (newDefaultProtocols in
// otlpreceiver v0.165.0); TestDefaultsAreUpstreams compares the two.
func createDefaultConfig() *Config {
	server := confighttp.NewDefaultServerConfig()
	server.NetAddr.Endpoint = "localhost:4318"
	server.TLS = configoptional.None[configtls.ServerConfig]()
	server.ReadHeaderTimeout = 0
	server.WriteTimeout = 0
	return &Config{HTTPConfig: otlpreceiver.HTTPConfig{
		ServerConfig:   server,
		TracesURLPath:  "/v1/traces",
		MetricsURLPath: "/v1/metrics",
		LogsURLPath:    "/v1/logs",
	}}
}

// Validate refuses what cannot serve: no address, or two signals on one path
// (upstream's receiver accepts that config and panics in its mux at start).
func (c *Config) Validate() error {
	var errs []error
	if c.ServerConfig.NetAddr.Endpoint == "" {
		errs = append(errs, errors.New("endpoint: must be set, for example 0.0.0.0:4318"))
	}
	seen := map[otlpreceiver.SanitizedURLPath]string{}
	for _, p := range []struct {
		field string
		path  otlpreceiver.SanitizedURLPath
	}{
		{"traces_url_path", c.TracesURLPath},
		{"metrics_url_path", c.MetricsURLPath},
		{"logs_url_path", c.LogsURLPath},
	} {
		if other, dup := seen[p.path]; dup {
			errs = append(errs, fmt.Errorf("%s: %q is already %s", p.field, p.path, other))
		}
		seen[p.path] = p.field
	}
	return errors.Join(errs...)
}
