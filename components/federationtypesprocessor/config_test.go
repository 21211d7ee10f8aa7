// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-relay/otelcol-relay/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	minimal := createDefaultConfig()
	minimal.Endpoint = "https://prometheus:9090"
	tigera := createDefaultConfig()
	tigera.Endpoint = "https://prometheus-http-api.tigera-prometheus.svc:9090"
	tigera.BearerTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	tigera.TLS.CAFile = "/etc/pki/tls/certs/tigera-ca-bundle.crt"
	tigera.Timeout = 5 * time.Second
	tigera.RefreshInterval = 2 * time.Minute
	tigera.MaxResponseSize = 1 << 20
	tigera.SeriesCache = SeriesCacheConfig{MaxSeries: 5000, TTL: 30 * time.Minute}
	tokenOverHTTPS := createDefaultConfig()
	tokenOverHTTPS.Endpoint = "https://p:9090"
	tokenOverHTTPS.BearerTokenFile = "/t"

	configtest.Run(t, NewFactory(), []configtest.Case{
		{Name: "minimal", Expected: minimal},
		{Name: "tigera", Expected: tigera},
		{Name: "token_over_https", Expected: tokenOverHTTPS},

		{Name: "", WantErr: `endpoint: must be set to the Prometheus server's base URL, e.g. "https://prometheus:9090"`},
		{Name: "bad_scheme", WantErr: `endpoint "ftp://p:9090": scheme must be http or https, got "ftp"`},
		{Name: "no_host", WantErr: `endpoint "http://": has no host`},
		{Name: "unparsable_endpoint", WantErr: `endpoint "https://[::1": parse "https://[::1": missing ']' in host`},
		{Name: "query", WantErr: `endpoint "http://p:9090?x=1": must not carry a query or fragment; set metadata_path for the path`},
		{Name: "token_over_http", WantErr: `bearer_token_file "/t": endpoint "http://p:9090" is plain http, so the token would travel in clear text; use https`},
		{Name: "ca_over_http", WantErr: `tls: certificates are configured but endpoint "http://p:9090" is plain http, so they would never be used; use https`},
		{Name: "token_and_authorization_header", WantErr: `bearer_token_file "/t": headers also set Authorization; configure only one`},
		{Name: "relative_path", WantErr: `metadata_path "api/v1/metadata": must start with /`},
		{Name: "refresh_too_often", WantErr: "refresh_interval 10ms: must be at least 1s"},
		{Name: "no_timeout", WantErr: "timeout 0s: must be positive, or a stuck server would block every refresh"},
		{Name: "negative_max_response_size", WantErr: "max_response_size -1: must be positive"},
		{Name: "no_series", WantErr: "series_cache.max_series 0: must be positive"},
		{Name: "no_ttl", WantErr: "series_cache.ttl 0s: must be positive"},
		{Name: "misspelt", WantErr: "invalid keys: refresh_intervall"},
	})
}

func TestConfigDefaults(t *testing.T) {
	def := createDefaultConfig()
	assert.Equal(t, "/api/v1/metadata", def.MetadataPath)
	assert.Equal(t, 5*time.Minute, def.RefreshInterval)
	assert.Equal(t, 10*time.Second, def.Timeout)
	assert.Equal(t, int64(16<<20), def.MaxResponseSize)
	assert.Equal(t, SeriesCacheConfig{MaxSeries: 200_000, TTL: 15 * time.Minute}, def.SeriesCache)
}

func TestMetadataURL(t *testing.T) {
	for endpoint, want := range map[string]string{
		"https://prometheus-http-api.tigera-prometheus.svc:9090": "https://prometheus-http-api.tigera-prometheus.svc:9090/api/v1/metadata",
		"https://p:9090/":      "https://p:9090/api/v1/metadata",
		"https://p:9090/prom/": "https://p:9090/prom/api/v1/metadata",
	} {
		cfg := createDefaultConfig()
		cfg.Endpoint = endpoint
		assert.Equal(t, want, cfg.metadataURL(), endpoint)
	}
}
