// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/collector/config/confighttp"
)

// Config configures the federation_types processor.
type Config struct {
	// ClientConfig is the HTTP client that reads the Prometheus server's metadata:
	// endpoint (the server's base URL, the same one the federation scrape uses),
	// tls (ca_file and friends), timeout, headers. Reusing the collector's own
	// client config means the CA, TLS versions and proxies behave exactly as in
	// the exporters.
	confighttp.ClientConfig `mapstructure:",squash"`

	// MetadataPath is appended to the endpoint.
	MetadataPath string `mapstructure:"metadata_path"`

	// BearerTokenFile is read before every refresh, so a rotated ServiceAccount
	// token is picked up without a restart. Its content is never logged.
	BearerTokenFile string `mapstructure:"bearer_token_file"`

	// RefreshInterval is how often the metadata is fetched again.
	RefreshInterval time.Duration `mapstructure:"refresh_interval"`

	// MaxResponseSize bounds the bytes read from one metadata response, so a
	// misbehaving or hostile server cannot make the collector allocate without
	// bound.
	MaxResponseSize int64 `mapstructure:"max_response_size"`

	// SeriesCache bounds the per-series state that start times need.
	SeriesCache SeriesCacheConfig `mapstructure:"series_cache"`

	_ struct{}
}

// SeriesCacheConfig bounds the start-time cache.
type SeriesCacheConfig struct {
	// MaxSeries is the most series remembered; the least recently seen series is
	// forgotten first (it gets a new start time if it comes back).
	MaxSeries int `mapstructure:"max_series"`
	// TTL forgets a series that has not been seen for this long.
	TTL time.Duration `mapstructure:"ttl"`

	_ struct{}
}

const (
	defaultMetadataPath    = "/api/v1/metadata"
	defaultRefreshInterval = 5 * time.Minute
	defaultTimeout         = 10 * time.Second
	defaultMaxResponseSize = 16 << 20
	defaultMaxSeries       = 200_000
	defaultSeriesTTL       = 15 * time.Minute
)

func createDefaultConfig() *Config {
	client := confighttp.NewDefaultClientConfig()
	client.Timeout = defaultTimeout
	return &Config{
		ClientConfig:    client,
		MetadataPath:    defaultMetadataPath,
		RefreshInterval: defaultRefreshInterval,
		MaxResponseSize: defaultMaxResponseSize,
		SeriesCache: SeriesCacheConfig{
			MaxSeries: defaultMaxSeries,
			TTL:       defaultSeriesTTL,
		},
	}
}

// Validate reports every problem at once; each message names the field and the
// value that is wrong. The embedded client config is validated by the collector
// itself.
func (c *Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.Endpoint)
	switch {
	case c.Endpoint == "":
		errs = append(errs, errors.New(`endpoint: must be set to the Prometheus server's base URL, e.g. "https://prometheus:9090"`))
	case err != nil:
		errs = append(errs, fmt.Errorf("endpoint %q: %w", c.Endpoint, err))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, fmt.Errorf("endpoint %q: scheme must be http or https, got %q", c.Endpoint, u.Scheme))
	case u.Host == "":
		errs = append(errs, fmt.Errorf("endpoint %q: has no host", c.Endpoint))
	case u.RawQuery != "" || u.Fragment != "":
		errs = append(errs, fmt.Errorf("endpoint %q: must not carry a query or fragment; set metadata_path for the path", c.Endpoint))
	}
	if err == nil && u != nil && u.Scheme == "http" {
		if c.BearerTokenFile != "" {
			errs = append(errs, fmt.Errorf("bearer_token_file %q: endpoint %q is plain http, so the token would travel in clear text; use https", c.BearerTokenFile, c.Endpoint))
		}
		if t := c.TLS; t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.CAPem != "" || t.CertPem != "" || t.KeyPem != "" {
			errs = append(errs, fmt.Errorf("tls: certificates are configured but endpoint %q is plain http, so they would never be used; use https", c.Endpoint))
		}
	}
	if !strings.HasPrefix(c.MetadataPath, "/") {
		errs = append(errs, fmt.Errorf("metadata_path %q: must start with /", c.MetadataPath))
	}
	if c.BearerTokenFile != "" {
		if _, ok := c.Headers.Get("Authorization"); ok {
			errs = append(errs, fmt.Errorf("bearer_token_file %q: headers also set Authorization; configure only one", c.BearerTokenFile))
		}
	}
	if c.RefreshInterval < time.Second {
		errs = append(errs, fmt.Errorf("refresh_interval %s: must be at least 1s", c.RefreshInterval))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must be positive, or a stuck server would block every refresh", c.Timeout))
	}
	if c.MaxResponseSize <= 0 {
		errs = append(errs, fmt.Errorf("max_response_size %d: must be positive", c.MaxResponseSize))
	}
	if c.SeriesCache.MaxSeries <= 0 {
		errs = append(errs, fmt.Errorf("series_cache.max_series %d: must be positive", c.SeriesCache.MaxSeries))
	}
	if c.SeriesCache.TTL <= 0 {
		errs = append(errs, fmt.Errorf("series_cache.ttl %s: must be positive", c.SeriesCache.TTL))
	}
	return errors.Join(errs...)
}

// metadataURL is the full URL of the metadata API.
func (c *Config) metadataURL() string {
	return strings.TrimSuffix(c.Endpoint, "/") + c.MetadataPath
}
