// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/otelcol-relay/otelcol-relay/components/internal/memtotal"
	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension/internal/metadata"
)

// NewFactory returns the factory of the queue_storage extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		func(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
			return newExtension(set, cfg.(*Config), func() (uint64, string, error) { return memtotal.Total(memtotal.Proc) })
		},
		metadata.ExtensionStability,
	)
}
