// SPDX-License-Identifier: Apache-2.0

// Package federationtypesprocessor restores the metric types that Prometheus
// federation loses. A Prometheus server's /federate endpoint writes every series
// as untyped, and the prometheus receiver turns untyped series into Gauges; the
// same server's /api/v1/metadata still knows every family's type. This
// processor reads that metadata and turns counters back into monotonic
// cumulative Sums, and the _bucket/_sum/_count (or quantile/_sum/_count) series
// of histograms and summaries back into Histogram and Summary points.
package federationtypesprocessor // import "github.com/otelcol-relay/otelcol-relay/components/federationtypesprocessor"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/otelcol-relay/otelcol-relay/components/federationtypesprocessor/internal/metadata"
)

// NewFactory returns the factory of the federation_types processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		processor.WithMetrics(createMetrics, metadata.MetricsStability),
	)
}

func createMetrics(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Metrics) (processor.Metrics, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("federation_types: unexpected config type %T", cfg)
	}
	p, err := newFederationTypes(c, set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewMetrics(ctx, set, cfg, next, p.processMetrics,
		processorhelper.WithStart(p.start),
		processorhelper.WithShutdown(p.shutdown),
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
	)
}
