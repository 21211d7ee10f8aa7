// SPDX-License-Identifier: Apache-2.0

package durablequeueprocessor // import "github.com/otelcol-relay/otelcol-relay/components/durablequeueprocessor"

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/collector/processor"

	"github.com/otelcol-relay/otelcol-relay/components/durablequeueprocessor/internal/metadata"
)

// NewFactory returns the factory of the durable_queue processor.
func NewFactory() processor.Factory {
	cl := &claims{held: map[string]struct{}{}}
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithLogs(func(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
			d, err := newDurableQueue(set, cfg.(*Config), pipeline.SignalLogs, logsCodec{}, next.ConsumeLogs, cl)
			if err != nil {
				return nil, err
			}
			return logsQueue{d}, nil
		}, metadata.LogsStability),
		processor.WithMetrics(func(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Metrics) (processor.Metrics, error) {
			d, err := newDurableQueue(set, cfg.(*Config), pipeline.SignalMetrics, metricsCodec{}, next.ConsumeMetrics, cl)
			if err != nil {
				return nil, err
			}
			return metricsQueue{d}, nil
		}, metadata.MetricsStability),
		processor.WithTraces(func(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
			d, err := newDurableQueue(set, cfg.(*Config), pipeline.SignalTraces, tracesCodec{}, next.ConsumeTraces, cl)
			if err != nil {
				return nil, err
			}
			return tracesQueue{d}, nil
		}, metadata.TracesStability),
	)
}

// claims makes a second started instance with the same id and signal (the
// processor listed in two pipelines of one signal) fail instead of sharing a store.
type claims struct {
	mu   sync.Mutex
	held map[string]struct{}
}

func (c *claims) claim(id component.ID, s pipeline.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := id.String() + "/" + s.String()
	if _, ok := c.held[k]; ok {
		return fmt.Errorf("%s is used in more than one %s pipeline; give each pipeline its own (for example %s/2)", id, s, id.Type())
	}
	c.held[k] = struct{}{}
	return nil
}

func (c *claims) release(id component.ID, s pipeline.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.held, id.String()+"/"+s.String())
}
