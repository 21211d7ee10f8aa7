// SPDX-License-Identifier: Apache-2.0

// Package queuestoragetest starts a real queue_storage extension for the tests
// of the components that queue on it (otlp_http_wire): their durability is
// only shown against the real store.
package queuestoragetest // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension/queuestoragetest"

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"
)

// ID is the ID the extension has in the host Start returns.
func ID() component.ID { return component.MustNewID("queue_storage") }

type host map[component.ID]component.Component

func (h host) GetExtensions() map[component.ID]component.Component { return h }

// Start starts queue_storage on dir, with its default config changed by
// configure, and returns a host that offers it under ID(), and a stop function
// that shuts it down (a restart: Start again on the same dir). It is also
// stopped when the test ends.
func Start(t testing.TB, dir string, configure ...func(*queuestorageextension.Config)) (component.Host, func()) {
	t.Helper()
	f := queuestorageextension.NewFactory()
	cfg := f.CreateDefaultConfig().(*queuestorageextension.Config)
	cfg.Directory = dir
	for _, c := range configure {
		c(cfg)
	}
	set := extension.Settings{ID: ID(), TelemetrySettings: extensiontest.NewNopSettings(f.Type()).TelemetrySettings, BuildInfo: component.NewDefaultBuildInfo()}
	ext, err := f.Create(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), nil))
	var once sync.Once
	stop := func() { once.Do(func() { require.NoError(t, ext.Shutdown(context.Background())) }) }
	t.Cleanup(stop)
	return host{ID(): ext}, stop
}
