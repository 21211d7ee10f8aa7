package federationtypesprocessor

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

const scopeName = "github.com/otelcol-relay/otelcol-relay/components/federationtypesprocessor"

// Self-telemetry names. They carry the otelcol_processor_ prefix that the
// collector's own components use, so they sit next to them on :8888.
const (
	metricFamiliesRetyped  = "otelcol_processor_federation_types_families_retyped"
	metricAmbiguous        = "otelcol_processor_federation_types_ambiguous_families"
	metricMetadataAge      = "otelcol_processor_federation_types_metadata_age"
	metricMetadataFamilies = "otelcol_processor_federation_types_metadata_families"
	metricRefreshFailures  = "otelcol_processor_federation_types_metadata_refresh_failures"
	metricSeries           = "otelcol_processor_federation_types_series"
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

type telemetry struct {
	familiesRetyped metric.Int64Counter
	refreshFailures metric.Int64Counter
	registration    metric.Registration
}

func newTelemetry(set component.TelemetrySettings, obs observed) (*telemetry, error) {
	meter := set.MeterProvider.Meter(scopeName)
	var errs, err error
	t := &telemetry{}
	t.familiesRetyped, err = meter.Int64Counter(metricFamiliesRetyped,
		metric.WithDescription("Metric families turned from gauges back into their Prometheus type, per batch, by the type they were given."),
		metric.WithUnit("{family}"))
	errs = errors.Join(errs, err)
	t.refreshFailures, err = meter.Int64Counter(metricRefreshFailures,
		metric.WithDescription("Metadata refreshes that failed; the last good metadata (or none) stays in use."),
		metric.WithUnit("{refresh}"))
	errs = errors.Join(errs, err)
	age, err := meter.Float64ObservableGauge(metricMetadataAge,
		metric.WithDescription("Seconds since the metadata in use was fetched; since the processor started when none was fetched yet."),
		metric.WithUnit("s"))
	errs = errors.Join(errs, err)
	ambiguous, err := meter.Int64ObservableGauge(metricAmbiguous,
		metric.WithDescription("Metric families whose targets disagree on the type; they are left unchanged."),
		metric.WithUnit("{family}"))
	errs = errors.Join(errs, err)
	families, err := meter.Int64ObservableGauge(metricMetadataFamilies,
		metric.WithDescription("Metric families in the metadata in use."),
		metric.WithUnit("{family}"))
	errs = errors.Join(errs, err)
	series, err := meter.Int64ObservableGauge(metricSeries,
		metric.WithDescription("Cumulative series whose start time is being tracked."),
		metric.WithUnit("{series}"))
	errs = errors.Join(errs, err)
	if errs != nil {
		return nil, errs
	}
	t.registration, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if v, ok := obs.metadataAgeSeconds(); ok {
			o.ObserveFloat64(age, v)
		}
		if v, ok := obs.ambiguous(); ok {
			o.ObserveInt64(ambiguous, v)
		}
		if v, ok := obs.families(); ok {
			o.ObserveInt64(families, v)
		}
		o.ObserveInt64(series, obs.series())
		return nil
	}, age, ambiguous, families, series)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (t *telemetry) recordRetyped(ctx context.Context, counters, histograms, summaries int64) {
	if counters > 0 {
		t.familiesRetyped.Add(ctx, counters, attrCounter)
	}
	if histograms > 0 {
		t.familiesRetyped.Add(ctx, histograms, attrHistogram)
	}
	if summaries > 0 {
		t.familiesRetyped.Add(ctx, summaries, attrSummary)
	}
}

func (t *telemetry) shutdown() {
	if t != nil && t.registration != nil {
		_ = t.registration.Unregister()
	}
}
