package durablequeueprocessor // import "github.com/otelcol-relay/otelcol-relay/components/durablequeueprocessor"

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

const scopeName = "github.com/otelcol-relay/otelcol-relay/components/durablequeueprocessor"

// telemetry publishes what the queue holds; the admission extension's drain
// waits for otelcol_durable_queue_size to reach 0 before a pod stops.
type telemetry struct {
	items, bytes atomic.Int64
	reg          metric.Registration
}

// Each instance labels its series with its id and signal: the collector does
// not add them to a processor's own metrics here, and two pipelines would
// otherwise report one series twice.
func newTelemetry(mp metric.MeterProvider, capacity int64, id, signal string) (*telemetry, error) {
	t := &telemetry{}
	attrs := metric.WithAttributes(attribute.String("processor", id), attribute.String("data_type", signal))
	m := mp.Meter(scopeName)
	size, err := m.Int64ObservableGauge("otelcol_durable_queue_size",
		metric.WithDescription("Records (log records, data points, spans) acknowledged and not yet delivered"),
		metric.WithUnit("{records}"))
	if err != nil {
		return nil, err
	}
	bytes, err := m.Int64ObservableGauge("otelcol_durable_queue_bytes",
		metric.WithDescription("Encoded bytes acknowledged and not yet delivered"),
		metric.WithUnit("By"))
	if err != nil {
		return nil, err
	}
	capGauge, err := m.Int64ObservableGauge("otelcol_durable_queue_capacity_bytes",
		metric.WithDescription("max_bytes: a request that does not fit is refused with a retryable error"),
		metric.WithUnit("By"))
	if err != nil {
		return nil, err
	}
	t.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(size, t.items.Load(), attrs)
		o.ObserveInt64(bytes, t.bytes.Load(), attrs)
		o.ObserveInt64(capGauge, capacity, attrs)
		return nil
	}, size, bytes, capGauge)
	return t, err
}

func (t *telemetry) record(items, bytes int64) {
	t.items.Store(items)
	t.bytes.Store(bytes)
}

func (t *telemetry) shutdown() {
	if t.reg != nil {
		_ = t.reg.Unregister()
	}
}
