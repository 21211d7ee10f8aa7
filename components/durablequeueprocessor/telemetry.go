// SPDX-License-Identifier: Apache-2.0

package durablequeueprocessor // import "github.com/otelcol-relay/otelcol-relay/components/durablequeueprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-relay/otelcol-relay/components/durablequeueprocessor/internal/metadata"
)

// newTelemetry publishes what the queue holds; the admission extension's
// drain waits for otelcol_durable_queue_size to reach 0 before a pod stops.
// Each instance labels its series with its id and signal: the collector does
// not put its component id on :8888, and two pipelines' series would collide.
// held is read at each collection, so the gauges cannot disagree with the queue.
func newTelemetry(set component.TelemetrySettings, capacity int64, id, signal string, held func() (items, bytes int64)) (*metadata.TelemetryBuilder, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("processor", id), attribute.String("data_type", signal)))
	err = tb.RegisterDurableQueueSizeCallback(func(_ context.Context, o metric.Int64Observer) error {
		items, _ := held()
		o.Observe(items, attrs)
		return nil
	})
	if err == nil {
		err = tb.RegisterDurableQueueBytesCallback(func(_ context.Context, o metric.Int64Observer) error {
			_, bytes := held()
			o.Observe(bytes, attrs)
			return nil
		})
	}
	if err == nil {
		err = tb.RegisterDurableQueueCapacityBytesCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(capacity, attrs)
			return nil
		})
	}
	if err != nil {
		tb.Shutdown()
		return nil, err
	}
	return tb, nil
}
