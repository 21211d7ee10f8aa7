// SPDX-License-Identifier: Apache-2.0

package durablequeueprocessor // import "github.com/otelcol-relay/otelcol-relay/components/durablequeueprocessor"

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/collector/processor"

	"github.com/otelcol-relay/otelcol-relay/components/durablequeueprocessor/internal/metadata"
)

// durableQueue is one pipeline's instance: the queue plus the component
// lifecycle around it.
type durableQueue[T any] struct {
	cfg     *Config
	id      component.ID
	signal  pipeline.Signal
	q       *queue[T]
	tel     *metadata.TelemetryBuilder
	claims  *claims
	claimed bool
}

func newDurableQueue[T any](set processor.Settings, cfg *Config, signal pipeline.Signal, c codec[T],
	next func(context.Context, T) error, cl *claims,
) (*durableQueue[T], error) {
	q := newQueue(cfg, c, next, set.Logger)
	tel, err := newTelemetry(set.TelemetrySettings, cfg.MaxBytes, set.ID.String(), signal.String(), q.held)
	if err != nil {
		return nil, err
	}
	return &durableQueue[T]{cfg: cfg, id: set.ID, signal: signal, tel: tel, claims: cl, q: q}, nil
}

func (d *durableQueue[T]) Start(ctx context.Context, host component.Host) error {
	ext, ok := host.GetExtensions()[d.cfg.Storage]
	if !ok {
		return fmt.Errorf("storage: extension %q is not configured (add it under extensions: and service::extensions)", d.cfg.Storage)
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return fmt.Errorf("storage: extension %q is not a storage extension", d.cfg.Storage)
	}
	// Two instances on one store would delete each other's items.
	if err := d.claims.claim(d.id, d.signal); err != nil {
		return err
	}
	d.claimed = true
	client, err := se.GetClient(ctx, component.KindProcessor, d.id, d.signal.String())
	if err != nil {
		return fmt.Errorf("storage: opening %q: %w", d.cfg.Storage, err)
	}
	if err := d.q.start(client); err != nil {
		return errors.Join(err, client.Close(ctx))
	}
	return nil
}

func (d *durableQueue[T]) Shutdown(ctx context.Context) error {
	err := d.q.shutdown(ctx)
	d.tel.Shutdown()
	if d.claimed {
		d.claims.release(d.id, d.signal)
		d.claimed = false
	}
	return err
}

// MutatesData: the queue keeps the request after Consume returns and merges
// it with others, so a fan-out must give it a copy of its own.
func (*durableQueue[T]) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

type logsQueue struct{ *durableQueue[plog.Logs] }

func (l logsQueue) ConsumeLogs(ctx context.Context, ld plog.Logs) error { return l.q.consume(ctx, ld) }

type metricsQueue struct{ *durableQueue[pmetric.Metrics] }

func (m metricsQueue) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	return m.q.consume(ctx, md)
}

type tracesQueue struct{ *durableQueue[ptrace.Traces] }

func (t tracesQueue) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	return t.q.consume(ctx, td)
}
