// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"
)

// minPollInterval keeps a mistyped poll_interval (1ms) from turning the backstop
// poll into a busy loop that re-reads and hashes the files all the time.
const minPollInterval = 100 * time.Millisecond

// Config is the configuration of one certwatch/<name> instance: the TLS material
// of one exporter identity.
type Config struct {
	// CAFile is a PEM bundle of the CAs that may sign the server's certificate.
	// Empty means the system roots. With no file at all the instance is a
	// header-only backend's TLS (the system roots, no client certificate), so
	// that one config serves both kinds of backend by setting files or not.
	CAFile string `mapstructure:"ca_file"`
	// IncludeSystemCACertsPool adds the system roots to the ca_file bundle.
	IncludeSystemCACertsPool bool `mapstructure:"include_system_ca_certs_pool"`
	// CertFile and KeyFile are the client certificate (PEM, leaf first, then any
	// intermediates) and its private key, for mutual TLS. Both or neither.
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// ServerNameOverride is the name the server's certificate is verified
	// against (and sent as SNI) instead of the endpoint's host.
	ServerNameOverride string `mapstructure:"server_name_override"`
	// MinVersion is the lowest TLS version offered: "1.0", "1.1", "1.2" or "1.3".
	MinVersion string `mapstructure:"min_version"`
	// PollInterval is how often the files are re-read and hashed, as a
	// backstop to the file-system watch (which can miss events, e.g. when a
	// whole directory is replaced or on network file systems).
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// Server says the files are a server's, not an exporter's: cert_file and
	// key_file its serving keypair, ca_file the bundle its clients are verified
	// against (the relay's receivers, whose configtls reloads them itself). Such
	// an instance only watches them and reports their expiry (roles server and
	// client_ca), so that the receivers' certificates are alerted on as the
	// backends' are; no exporter may use it as a middleware. With no file at all
	// it watches nothing: plaintext receivers (config/receiver-plaintext.yaml).
	Server bool `mapstructure:"server"`

	// prevent unkeyed literal initialization
	_ struct{}
}

func createDefaultConfig() *Config {
	return &Config{
		MinVersion:   "1.2",
		PollInterval: 30 * time.Second,
	}
}

var tlsVersions = map[string]uint16{
	"1.0": tls.VersionTLS10,
	"1.1": tls.VersionTLS11,
	"1.2": tls.VersionTLS12,
	"1.3": tls.VersionTLS13,
}

// Validate checks the configuration without touching the files: their content is
// checked at Start, and again on every change.
func (c *Config) Validate() error {
	var errs []error
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, fmt.Errorf("cert_file (%q) and key_file (%q) must be set together", c.CertFile, c.KeyFile))
	}
	if c.Server && c.CertFile == "" && c.CAFile != "" {
		errs = append(errs, fmt.Errorf("server: true with ca_file (%q) needs cert_file and key_file, the server's keypair", c.CAFile))
	}
	if c.Server && c.IncludeSystemCACertsPool {
		errs = append(errs, errors.New("include_system_ca_certs_pool: a server (server: true) verifies its clients against ca_file alone"))
	}
	if c.IncludeSystemCACertsPool && c.CAFile == "" {
		errs = append(errs, errors.New("include_system_ca_certs_pool: true needs ca_file; without ca_file the system roots are used anyway"))
	}
	if _, ok := tlsVersions[c.MinVersion]; !ok {
		errs = append(errs, fmt.Errorf("min_version: %q is not a TLS version; use \"1.0\", \"1.1\", \"1.2\" or \"1.3\"", c.MinVersion))
	}
	if c.PollInterval < minPollInterval {
		errs = append(errs, fmt.Errorf("poll_interval: %s is below the minimum of %s", c.PollInterval, minPollInterval))
	}
	return errors.Join(errs...)
}
