// SPDX-License-Identifier: Apache-2.0

package admissionextension

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/otelcol-relay/otelcol-relay/components/admissionextension/internal/metadata"
)

// NewFactory returns the factory of the admission extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		func(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
			return newAdmission(set, cfg.(*Config))
		},
		metadata.ExtensionStability,
	)
}
