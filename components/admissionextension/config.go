// SPDX-License-Identifier: Apache-2.0

package admissionextension // import "github.com/otelcol-relay/otelcol-relay/components/admissionextension"

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"
)

// Config bounds how many export requests a receiver decodes at once, how long a
// request may hold a slot while its body uploads, how long an HTTP connection is
// reused, and how the relay drains before it stops.
type Config struct {
	// MaxInFlightRequests is how many requests may be decoded and processed at
	// the same time, across every receiver protocol that references this
	// instance. On HTTP a request takes its slot once its body has arrived.
	MaxInFlightRequests int `mapstructure:"max_in_flight_requests"`
	// MaxWait is how long a request waits for a slot before it is refused with a
	// retryable status (HTTP 503 with Retry-After, gRPC UNAVAILABLE).
	MaxWait time.Duration `mapstructure:"max_wait"`
	// BodyReadTimeout bounds how long an HTTP request may take to upload its
	// body; a stalled upload then gets a retryable 503 and frees its body read.
	// 0 disables the bound.
	BodyReadTimeout time.Duration `mapstructure:"body_read_timeout"`
	// MaxBodyReads is how many HTTP requests may hold a body at the same time:
	// receiving it, waiting for a slot with it, or in a slot. 0 is twice
	// MaxInFlightRequests.
	MaxBodyReads int `mapstructure:"max_body_reads"`
	// MaxConnectionAge makes the HTTP receiver answer `Connection: close` on the
	// first request after a connection is this old, so that clients reconnect
	// and a per-connection balancer (kube-proxy) spreads them over new
	// replicas. 0 keeps connections for as long as clients do.
	MaxConnectionAge time.Duration `mapstructure:"max_connection_age"`
	// Drain serves the preStop and readiness endpoints.
	Drain DrainConfig `mapstructure:"drain"`
}

// DrainConfig configures the endpoint that takes the relay out of service before
// it stops.
type DrainConfig struct {
	// Endpoint is host:port for GET /drain (the preStop hook) and GET /ready (the
	// readiness probe). Empty: no endpoint.
	Endpoint string `mapstructure:"endpoint"`
	// Timeout is how long GET /drain waits for the exporters' queues to empty;
	// keep it below the pod's terminationGracePeriodSeconds, which also has to
	// cover the shutdown after SIGTERM.
	Timeout time.Duration `mapstructure:"timeout"`
	// MetricsURL is the collector's own Prometheus endpoint; /drain reads
	// otelcol_exporter_queue_size from it. Empty: /drain waits only for the
	// requests in progress.
	MetricsURL string `mapstructure:"metrics_url"`
	// PollInterval is how often /drain reads the queue sizes.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// AllowedSources are the addresses GET /drain is accepted from: IPs, CIDR
	// prefixes, or default_gateway (this pod's default gateway, which many
	// CNIs use as the node's source address towards its pods). In a pod: the
	// node (status.hostIP), where the kubelet runs the preStop hook from.
	AllowedSources []string `mapstructure:"allowed_sources"`
	// ResumeAfter ends a drain that no shutdown followed: intake resumes and
	// /ready turns 200 again. Keep it above the pod's
	// terminationGracePeriodSeconds, by when a real scale-down has sent SIGTERM.
	ResumeAfter time.Duration `mapstructure:"resume_after"`
}

// defaultGatewaySource is the allowed_sources entry for this pod's default
// gateway, read from the routing table when the endpoint starts.
const defaultGatewaySource = "default_gateway"

// bodyReads is MaxBodyReads with 0 resolved.
func (c *Config) bodyReads() int {
	if c.MaxBodyReads == 0 {
		return 2 * c.MaxInFlightRequests
	}
	return c.MaxBodyReads
}

func createDefaultConfig() *Config {
	return &Config{
		MaxInFlightRequests: 8,
		MaxWait:             5 * time.Second,
		BodyReadTimeout:     10 * time.Second,
		Drain: DrainConfig{
			Timeout: 100 * time.Second, PollInterval: 500 * time.Millisecond,
			// Outside a pod only this host's own processes.
			AllowedSources: []string{"127.0.0.1", "::1"},
			// 2.5 times the StatefulSet's terminationGracePeriodSeconds (120s).
			ResumeAfter: 5 * time.Minute,
		},
	}
}

// Validate checks the bounds.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxInFlightRequests < 1 {
		errs = append(errs, fmt.Errorf("max_in_flight_requests %d: must be at least 1", c.MaxInFlightRequests))
	}
	if c.MaxWait < 0 {
		errs = append(errs, fmt.Errorf("max_wait %s: must not be negative", c.MaxWait))
	}
	if c.BodyReadTimeout < 0 {
		errs = append(errs, fmt.Errorf("body_read_timeout %s: must not be negative (0 disables it)", c.BodyReadTimeout))
	}
	if c.MaxBodyReads < 0 || (c.MaxBodyReads > 0 && c.MaxBodyReads < c.MaxInFlightRequests) {
		errs = append(errs, fmt.Errorf("max_body_reads %d: must be 0 (twice max_in_flight_requests) or at least max_in_flight_requests (%d): a request receives its body before it takes a slot", c.MaxBodyReads, c.MaxInFlightRequests))
	}
	if c.MaxConnectionAge < 0 {
		errs = append(errs, fmt.Errorf("max_connection_age %s: must not be negative (0 disables it)", c.MaxConnectionAge))
	}
	d := c.Drain
	if d.Endpoint != "" {
		if _, _, err := net.SplitHostPort(d.Endpoint); err != nil {
			errs = append(errs, fmt.Errorf("drain::endpoint %q: want host:port: %w", d.Endpoint, err))
		}
	}
	if d.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("drain::timeout %s: must be positive", d.Timeout))
	}
	if d.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("drain::poll_interval %s: must be positive", d.PollInterval))
	}
	if d.Endpoint != "" && len(d.AllowedSources) == 0 {
		errs = append(errs, errors.New("drain::allowed_sources is empty: no one could start a drain; list the node's address (the kubelet's), or 127.0.0.1"))
	}
	for _, s := range d.AllowedSources {
		if _, err := parseSource(s); err != nil {
			errs = append(errs, fmt.Errorf("drain::allowed_sources entry %q: want an IP, a CIDR prefix or %s", s, defaultGatewaySource))
		}
	}
	if d.ResumeAfter <= d.Timeout {
		errs = append(errs, fmt.Errorf("drain::resume_after %s: must be longer than drain::timeout %s, or a drain would resume before it ends", d.ResumeAfter, d.Timeout))
	}
	if d.MetricsURL != "" {
		if u, err := url.Parse(d.MetricsURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("drain::metrics_url %q: want an http(s) URL of the collector's own Prometheus metrics", d.MetricsURL))
		}
	}
	return errors.Join(errs...)
}
