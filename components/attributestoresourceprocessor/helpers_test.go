// SPDX-License-Identifier: Apache-2.0

package attributestoresourceprocessor

import (
	"context"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/groupbyattrsprocessor"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
)

// podKeys are the keys the gateway lifts (config/gateway.yaml).
var podKeys = []string{"k8s.pod.uid", "k8s.pod.name", "k8s.namespace.name", "k8s.container.name"}

// newOurs starts an attributes_to_resource processor with keys in front of next.
func newOurs(tb testing.TB, keys []string, next consumer.Logs) processor.Logs {
	tb.Helper()
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Keys = keys
	require.NoError(tb, cfg.Validate())
	return start(tb, f, cfg, next)
}

// newUpstream starts upstream's groupbyattrs (the real component of the
// distribution) with keys in front of next.
func newUpstream(tb testing.TB, keys []string, next consumer.Logs) processor.Logs {
	tb.Helper()
	f := groupbyattrsprocessor.NewFactory()
	cfg := f.CreateDefaultConfig().(*groupbyattrsprocessor.Config)
	cfg.GroupByKeys = keys
	return start(tb, f, cfg, next)
}

func start(tb testing.TB, f processor.Factory, cfg component.Config, next consumer.Logs) processor.Logs {
	tb.Helper()
	p, err := f.CreateLogs(context.Background(), processortest.NewNopSettings(f.Type()), cfg, next)
	require.NoError(tb, err)
	require.NoError(tb, p.Start(context.Background(), componenttest.NewNopHost()))
	tb.Cleanup(func() { require.NoError(tb, p.Shutdown(context.Background())) })
	return p
}
