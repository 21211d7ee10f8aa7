package federationtypesprocessor

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/confmap"
)

const exampleYAML = `
endpoint: https://prometheus-http-api.tigera-prometheus.svc:9090
bearer_token_file: /var/run/secrets/kubernetes.io/serviceaccount/token
tls:
  ca_file: /etc/pki/tls/certs/tigera-ca-bundle.crt
timeout: 5s
refresh_interval: 2m
max_response_size: 1048576
series_cache:
  max_series: 5000
  ttl: 30m
`

func TestConfigUnmarshalAndDefaults(t *testing.T) {
	r, err := confmap.NewRetrievedFromYAML([]byte(exampleYAML))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := r.AsConf()
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	if err := conf.Unmarshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := confmap.Validate(cfg); err != nil {
		t.Fatalf("example config invalid: %v", err)
	}
	if cfg.TLS.CAFile != "/etc/pki/tls/certs/tigera-ca-bundle.crt" || cfg.Timeout != 5*time.Second ||
		cfg.RefreshInterval != 2*time.Minute || cfg.MaxResponseSize != 1<<20 ||
		cfg.SeriesCache.MaxSeries != 5000 || cfg.SeriesCache.TTL != 30*time.Minute {
		t.Errorf("unmarshalled %+v", cfg)
	}
	if cfg.MetadataPath != "/api/v1/metadata" {
		t.Errorf("metadata_path default %q", cfg.MetadataPath)
	}
	if got := cfg.metadataURL(); got != "https://prometheus-http-api.tigera-prometheus.svc:9090/api/v1/metadata" {
		t.Errorf("metadata URL %q", got)
	}

	def := createDefaultConfig()
	if def.RefreshInterval != 5*time.Minute || def.Timeout != 10*time.Second || def.MaxResponseSize != 16<<20 ||
		def.SeriesCache.MaxSeries != 200_000 || def.SeriesCache.TTL != 15*time.Minute {
		t.Errorf("defaults %+v", def)
	}
}

func TestUnknownFieldIsRejected(t *testing.T) {
	conf := confmap.NewFromStringMap(map[string]any{"endpoint": "http://p:9090", "refresh_intervall": "1m"})
	err := conf.Unmarshal(createDefaultConfig())
	if err == nil || !strings.Contains(err.Error(), "refresh_intervall") {
		t.Errorf("error %v, want it to name the misspelt key", err)
	}
}

func TestValidateNamesFieldAndValue(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no endpoint", func(c *Config) { c.Endpoint = "" }, "endpoint: must be set"},
		{"bad scheme", func(c *Config) { c.Endpoint = "ftp://p:9090" }, `endpoint "ftp://p:9090": scheme must be http or https, got "ftp"`},
		{"no host", func(c *Config) { c.Endpoint = "http://" }, `endpoint "http://": has no host`},
		{"query", func(c *Config) { c.Endpoint = "http://p:9090?x=1" }, `endpoint "http://p:9090?x=1": must not carry a query`},
		{"token over http", func(c *Config) { c.BearerTokenFile = "/t" }, `bearer_token_file "/t": endpoint "http://p:9090" is plain http`},
		{"ca over http", func(c *Config) { c.TLS.CAFile = "/ca" }, `tls: certificates are configured but endpoint "http://p:9090" is plain http`},
		{"path", func(c *Config) { c.MetadataPath = "api/v1/metadata" }, `metadata_path "api/v1/metadata": must start with /`},
		{"refresh", func(c *Config) { c.RefreshInterval = 10 * time.Millisecond }, "refresh_interval 10ms: must be at least 1s"},
		{"timeout", func(c *Config) { c.Timeout = 0 }, "timeout 0s: must be positive"},
		{"max size", func(c *Config) { c.MaxResponseSize = -1 }, "max_response_size -1: must be positive"},
		{"max series", func(c *Config) { c.SeriesCache.MaxSeries = 0 }, "series_cache.max_series 0: must be positive"},
		{"ttl", func(c *Config) { c.SeriesCache.TTL = 0 }, "series_cache.ttl 0s: must be positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := createDefaultConfig()
			cfg.Endpoint = "http://p:9090"
			c.mod(cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
	ok := createDefaultConfig()
	ok.Endpoint = "https://p:9090"
	ok.BearerTokenFile = "/t"
	if err := ok.Validate(); err != nil {
		t.Errorf("valid https config rejected: %v", err)
	}
}
