// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), []configtest.Case{
		{Name: "", Expected: &Config{CAFile: "/etc/relay/backend/ca.crt", MinVersion: "1.2", PollInterval: 30 * time.Second}},
		{
			Name: "custom",
			Expected: &Config{
				CAFile:                   "/etc/relay/backend/ca.crt",
				IncludeSystemCACertsPool: true,
				CertFile:                 "/etc/relay/backend/tls.crt",
				KeyFile:                  "/etc/relay/backend/tls.key",
				ServerNameOverride:       "backend.example.com",
				MinVersion:               "1.3",
				PollInterval:             5 * time.Second,
			},
		},
		{
			Name: "client_only",
			Expected: &Config{
				CertFile:     "/etc/relay/backend/tls.crt",
				KeyFile:      "/etc/relay/backend/tls.key",
				MinVersion:   "1.2",
				PollInterval: 30 * time.Second,
			},
		},

		// No file: the system roots and no client certificate (a header-only backend).
		{Name: "nothing", Expected: &Config{MinVersion: "1.2", PollInterval: 30 * time.Second}},
		{Name: "cert_without_key", WantErr: `cert_file ("/etc/relay/backend/tls.crt") and key_file ("") must be set together`},
		{Name: "key_without_cert", WantErr: `cert_file ("") and key_file ("/etc/relay/backend/tls.key") must be set together`},
		{Name: "system_pool_without_ca_file", WantErr: "include_system_ca_certs_pool: true needs ca_file"},
		{Name: "bad_min_version", WantErr: `min_version: "1.4" is not a TLS version; use "1.0", "1.1", "1.2" or "1.3"`},
		{Name: "poll_too_short", WantErr: "poll_interval: 1ms is below the minimum of 100ms"},
		{Name: "misspelt", WantErr: "invalid keys: ca_flie"},
	})
}
