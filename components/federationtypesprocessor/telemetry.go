// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-relay/otelcol-relay/components/federationtypesprocessor/internal/metadata"
)

var (
	attrCounter   = metric.WithAttributeSet(attribute.NewSet(attribute.String("type", "counter")))
	attrHistogram = metric.WithAttributeSet(attribute.NewSet(attribute.String("type", "histogram")))
	attrSummary   = metric.WithAttributeSet(attribute.NewSet(attribute.String("type", "summary")))
)

// observed is what the asynchronous instruments read at collection time.
type observed struct {
	metadataAgeSeconds func() (float64, bool)
	ambiguous          func() (int64, bool)
	families           func() (int64, bool)
	series             func() int64
}

// telemetry is the generated builder (metadata.yaml names the instruments)
// with the processor's state wired to its gauges.
type telemetry struct {
	*metadata.TelemetryBuilder
}

func newTelemetry(set component.TelemetrySettings, obs observed) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t := &telemetry{tb}
	if err := t.register(obs); err != nil {
		tb.Shutdown()
		return nil, err
	}
	return t, nil
}

func (t *telemetry) register(obs observed) error {
	if err := t.RegisterProcessorFederationTypesMetadataAgeCallback(func(_ context.Context, o metric.Float64Observer) error {
		if v, ok := obs.metadataAgeSeconds(); ok {
			o.Observe(v)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := t.RegisterProcessorFederationTypesAmbiguousFamiliesCallback(func(_ context.Context, o metric.Int64Observer) error {
		if v, ok := obs.ambiguous(); ok {
			o.Observe(v)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := t.RegisterProcessorFederationTypesMetadataFamiliesCallback(func(_ context.Context, o metric.Int64Observer) error {
		if v, ok := obs.families(); ok {
			o.Observe(v)
		}
		return nil
	}); err != nil {
		return err
	}
	return t.RegisterProcessorFederationTypesSeriesCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(obs.series())
		return nil
	})
}

func (t *telemetry) recordRetyped(ctx context.Context, counters, histograms, summaries int64) {
	if counters > 0 {
		t.ProcessorFederationTypesFamiliesRetyped.Add(ctx, counters, attrCounter)
	}
	if histograms > 0 {
		t.ProcessorFederationTypesFamiliesRetyped.Add(ctx, histograms, attrHistogram)
	}
	if summaries > 0 {
		t.ProcessorFederationTypesFamiliesRetyped.Add(ctx, summaries, attrSummary)
	}
}

func (t *telemetry) shutdown() {
	if t != nil {
		t.Shutdown()
	}
}
