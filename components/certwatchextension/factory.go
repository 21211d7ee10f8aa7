// SPDX-License-Identifier: Apache-2.0

// Package certwatchextension implements the certwatch extension: it serves an
// exporter's CA bundle and client certificate from files, and swaps in new
// versions of them while the collector runs, with no restart and without
// dropping anything the exporters hold. Exporters reference it as a client
// middleware (see README.md).
package certwatchextension

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/otelcol-relay/otelcol-relay/components/certwatchextension/internal/metadata"
)

// NewFactory returns the factory of the certwatch extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		func(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
			return newCertwatch(set, cfg.(*Config)), nil
		},
		metadata.ExtensionStability,
	)
}
