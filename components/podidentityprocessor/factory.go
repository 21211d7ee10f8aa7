// SPDX-License-Identifier: Apache-2.0

// Package podidentityprocessor makes a node agent take pod identity from the
// connection, never from what a client writes into its resource. k8s_attributes
// (v1.3.1) never overwrites a resource attribute that is already set, so a pod
// that sends k8s.pod.uid or k8s.namespace.name of another workload would keep
// them, and an association on those attributes would even fetch the other
// pod's metadata. Two instances of this processor bracket k8s_attributes: the
// first sets the client's claims aside, the second compares them with what the
// connection's pod says, counts the ones that disagree and drops them all.
package podidentityprocessor // import "github.com/otelcol-relay/otelcol-relay/components/podidentityprocessor"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/otelcol-relay/otelcol-relay/components/podidentityprocessor/internal/metadata"
)

// NewFactory returns the factory of the pod_identity processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		processor.WithLogs(createLogs, metadata.LogsStability),
		processor.WithMetrics(createMetrics, metadata.MetricsStability),
		processor.WithTraces(createTraces, metadata.TracesStability),
	)
}

var capabilities = processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true})

func newFromConfig(set processor.Settings, cfg component.Config) (*podIdentity, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("pod_identity: unexpected config type %T", cfg)
	}
	return newPodIdentity(c, set.TelemetrySettings)
}

func createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	p, err := newFromConfig(set, cfg)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewLogs(ctx, set, cfg, next, p.processLogs, capabilities)
}

func createMetrics(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Metrics) (processor.Metrics, error) {
	p, err := newFromConfig(set, cfg)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewMetrics(ctx, set, cfg, next, p.processMetrics, capabilities)
}

func createTraces(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	p, err := newFromConfig(set, cfg)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewTraces(ctx, set, cfg, next, p.processTraces, capabilities)
}
