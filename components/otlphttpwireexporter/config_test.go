// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
)

func loadConfig(t *testing.T, key string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(key)
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

// The defaults are otlp_http's.
func TestDefaultConfigIsOTLPHTTPs(t *testing.T) {
	ours := NewFactory().CreateDefaultConfig().(*Config)
	up := otlphttpexporter.NewFactory().CreateDefaultConfig().(*otlphttpexporter.Config)
	assert.Equal(t, up.ClientConfig, ours.ClientConfig)
	assert.Equal(t, up.QueueConfig, ours.QueueConfig)
	assert.Equal(t, up.RetryConfig, ours.RetryConfig)
	assert.Equal(t, string(up.Encoding), ours.Encoding)
}

func TestOTLPHTTPConfigMovesOver(t *testing.T) {
	cfg := loadConfig(t, "otlp_http_wire")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, configcompression.TypeZstd, cfg.ClientConfig.Compression)
	assert.Equal(t, 10*time.Second, cfg.ClientConfig.Timeout)
	assert.Equal(t, "/certs/ca.crt", cfg.ClientConfig.TLS.CAFile)
	q := cfg.QueueConfig.Get()
	assert.Equal(t, exporterhelper.RequestSizerTypeItems, q.Sizer)
	assert.Equal(t, int64(2000), q.Batch.Get().MaxSize)
	assert.Equal(t, 10*time.Minute, cfg.RetryConfig.MaxElapsedTime)

	logs, err := cfg.signalURL(cfg.LogsEndpoint, "logs")
	require.NoError(t, err)
	assert.Equal(t, "https://logs.example:4318/custom/logs", logs.String())
	metrics, err := cfg.signalURL(cfg.MetricsEndpoint, "metrics")
	require.NoError(t, err)
	assert.Equal(t, "https://logs.example:4318/v1/metrics", metrics.String(), "a trailing slash is not doubled")

	// the same YAML under otlp_http gives the same settings
	up := otlphttpexporter.NewFactory().CreateDefaultConfig().(*otlphttpexporter.Config)
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub("otlp_http_wire")
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(up))
	assert.Equal(t, up.ClientConfig, cfg.ClientConfig)
	assert.Equal(t, up.QueueConfig, cfg.QueueConfig)
	assert.Equal(t, up.RetryConfig, cfg.RetryConfig)
}

func TestConfigRefusals(t *testing.T) {
	for key, want := range map[string]string{
		"otlp_http_wire/json":     `encoding: "json" is not supported: otlp_http_wire sends the OTLP protobuf bytes it encoded at intake; use otlp_http for JSON`,
		"otlp_http_wire/profiles": "profiles_endpoint: otlp_http_wire exports logs, metrics and traces only",
		"otlp_http_wire/none":     "at least one endpoint must be specified",
	} {
		err := confmap.Validate(loadConfig(t, key))
		require.Error(t, err, key)
		assert.Contains(t, err.Error(), want, key)
	}
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = "https://a.example"
	cfg.Encoding = "xml"
	assert.ErrorContains(t, confmap.Validate(cfg), `encoding: invalid value "xml"`)
}
