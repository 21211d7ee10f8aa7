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
	if err := t.RegisterProcessorFederationTypesMetadataAgeCallback(observeKnown[metric.Float64Observer](obs.metadataAgeSeconds)); err != nil {
		return err
	}
	if err := t.RegisterProcessorFederationTypesAmbiguousFamiliesCallback(observeKnown[metric.Int64Observer](obs.ambiguous)); err != nil {
		return err
	}
	if err := t.RegisterProcessorFederationTypesMetadataFamiliesCallback(observeKnown[metric.Int64Observer](obs.families)); err != nil {
		return err
	}
	return t.RegisterProcessorFederationTypesSeriesCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(obs.series())
		return nil
	})
}

// valueObserver is what metric.Int64Observer and metric.Float64Observer share.
type valueObserver[T any] interface {
	Observe(T, ...metric.ObserveOption)
}

// observeKnown is a callback that observes get's value only when it has one,
// so that a gauge has no point rather than a made-up 0. O is named at the call
// because the generated Register functions take typed callbacks.
func observeKnown[O valueObserver[T], T any](get func() (T, bool)) func(context.Context, O) error {
	return func(_ context.Context, o O) error {
		if v, ok := get(); ok {
			o.Observe(v)
		}
		return nil
	}
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
