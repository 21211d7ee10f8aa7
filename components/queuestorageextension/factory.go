package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension/internal/metadata"
)

// NewFactory returns the factory of the queue_storage extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		func(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
			return newExtension(set, cfg.(*Config)), nil
		},
		metadata.ExtensionStability,
	)
}
