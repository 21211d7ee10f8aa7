package durablequeueprocessor // import "github.com/otelcol-relay/otelcol-relay/components/durablequeueprocessor"

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-relay/otelcol-relay/components/durablequeueprocessor/internal/metadata"
)

// telemetry publishes what the queue holds; the admission extension's drain
// waits for otelcol_durable_queue_size to reach 0 before a pod stops.
type telemetry struct {
	*metadata.TelemetryBuilder
	items, bytes atomic.Int64
}

// Each instance labels its series with its id and signal: the collector does
// not put its component id on :8888, and two pipelines' series would collide.
func newTelemetry(set component.TelemetrySettings, capacity int64, id, signal string) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t := &telemetry{TelemetryBuilder: tb}
	attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("processor", id), attribute.String("data_type", signal)))
	err = t.RegisterDurableQueueSizeCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(t.items.Load(), attrs)
		return nil
	})
	if err == nil {
		err = t.RegisterDurableQueueBytesCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(t.bytes.Load(), attrs)
			return nil
		})
	}
	if err == nil {
		err = t.RegisterDurableQueueCapacityBytesCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(capacity, attrs)
			return nil
		})
	}
	if err != nil {
		tb.Shutdown()
		return nil, err
	}
	return t, nil
}

func (t *telemetry) record(items, bytes int64) {
	t.items.Store(items)
	t.bytes.Store(bytes)
}

func (t *telemetry) shutdown() { t.Shutdown() }
