// SPDX-License-Identifier: Apache-2.0

package peerhandoffextension // import "github.com/otelcol-relay/otelcol-relay/components/peerhandoffextension"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/extension"

	"github.com/otelcol-relay/otelcol-relay/components/peerhandoffextension/internal/metadata"
)

// NewFactory returns the factory of the peer_handoff extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		func(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
			return newHandoff(set, cfg.(*Config))
		},
		metadata.ExtensionStability,
	)
}

func createDefaultConfig() *Config {
	server := confighttp.NewDefaultServerConfig()
	// One hand-off is one queue request as the exporter batches it: 2,000
	// records of up to 16 KiB each fit.
	server.MaxRequestBodySize = 64 << 20
	client := confighttp.NewDefaultClientConfig()
	// A peer that takes longer than this to store one request is skipped for
	// the next: the drain's budget is short.
	client.Timeout = 10 * time.Second
	return &Config{
		Enabled:    true,
		Server:     server,
		Client:     client,
		MaxOrdinal: 15,
		StartAfter: 10 * time.Second,
	}
}
