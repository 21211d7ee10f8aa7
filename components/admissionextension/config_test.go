// SPDX-License-Identifier: Apache-2.0

package admissionextension

import (
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	defaults := &Config{
		MaxInFlightRequests: 8,
		MaxWait:             5 * time.Second,
		BodyReadTimeout:     10 * time.Second,
		Drain: DrainConfig{
			Timeout: 100 * time.Second, PollInterval: 500 * time.Millisecond,
			AllowedSources: []string{"127.0.0.1", "::1"}, ResumeAfter: 5 * time.Minute,
		},
	}
	configtest.Run(t, NewFactory(), []configtest.Case{
		{Name: "", Expected: defaults},
		{
			Name: "custom",
			Expected: &Config{
				MaxInFlightRequests: 16,
				MaxWait:             2 * time.Second,
				BodyReadTimeout:     0,
				MaxBodyReads:        24,
				MaxConnectionAge:    10 * time.Minute,
				Drain: DrainConfig{
					Endpoint:       "0.0.0.0:13134",
					Timeout:        50 * time.Second,
					MetricsURL:     "http://127.0.0.1:8888/metrics",
					PollInterval:   time.Second,
					AllowedSources: []string{"10.0.0.7", "fd00::/64", "default_gateway"},
					ResumeAfter:    4 * time.Minute,
				},
			},
		},

		{Name: "no_slots", WantErr: "max_in_flight_requests 0: must be at least 1"},
		{Name: "negative_max_wait", WantErr: "max_wait -1s: must not be negative"},
		{Name: "negative_body_read_timeout", WantErr: "body_read_timeout -1s: must not be negative (0 disables it)"},
		{Name: "fewer_body_reads_than_slots", WantErr: "max_body_reads 4: must be 0 (twice max_in_flight_requests) or at least max_in_flight_requests (8): a request receives its body before it takes a slot"},
		{Name: "negative_max_body_reads", WantErr: "max_body_reads -1: must be 0"},
		{Name: "negative_max_connection_age", WantErr: "max_connection_age -1s: must not be negative (0 disables it)"},
		{Name: "drain_endpoint_without_host", WantErr: `drain::endpoint "13134": want host:port`},
		{Name: "drain_timeout_zero", WantErr: "drain::timeout 0s: must be positive"},
		{Name: "drain_poll_interval_zero", WantErr: "drain::poll_interval 0s: must be positive"},
		{Name: "drain_metrics_url_without_scheme", WantErr: `drain::metrics_url "localhost:8888": want an http(s) URL of the collector's own Prometheus metrics`},
		{Name: "drain_allowed_sources_empty", WantErr: "drain::allowed_sources is empty: no one could start a drain"},
		{Name: "drain_allowed_sources_hostname", WantErr: `drain::allowed_sources entry "node-1": want an IP, a CIDR prefix or default_gateway`},
		{Name: "drain_allowed_sources_bad_prefix", WantErr: `drain::allowed_sources entry "10.0.0.0/33": want an IP, a CIDR prefix or default_gateway`},
		{Name: "drain_resume_before_timeout", WantErr: "drain::resume_after 1m0s: must be longer than drain::timeout 1m40s, or a drain would resume before it ends"},
		{Name: "misspelt", WantErr: "invalid keys: max_in_flight"},
	})
}
