package admissionextension // import "github.com/otelcol-relay/otelcol-relay/components/admissionextension"

import (
	"errors"
	"fmt"
	"time"
)

// Config bounds how many export requests a receiver decodes at once.
type Config struct {
	// MaxInFlightRequests is how many requests may be read and decoded at the
	// same time, across every receiver protocol that references this instance.
	MaxInFlightRequests int `mapstructure:"max_in_flight_requests"`
	// MaxWait is how long a request waits for a slot before it is refused with a
	// retryable status (HTTP 503 with Retry-After, gRPC UNAVAILABLE).
	MaxWait time.Duration `mapstructure:"max_wait"`
}

func createDefaultConfig() *Config {
	return &Config{MaxInFlightRequests: 8, MaxWait: 5 * time.Second}
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
	return errors.Join(errs...)
}
