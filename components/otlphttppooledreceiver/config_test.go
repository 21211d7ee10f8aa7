// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"

	"github.com/otelcol-relay/otelcol-relay/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	gateway := createDefaultConfig()
	gateway.ServerConfig.NetAddr.Endpoint = "0.0.0.0:4318"
	gateway.ServerConfig.MaxRequestBodySize = 8388608
	gateway.ServerConfig.ReadHeaderTimeout = 10 * time.Second
	gateway.LogsURLPath = "/fluent-bit/logs" // sanitized as upstream does
	configtest.Run(t, NewFactory(), []configtest.Case{
		{Name: "", Expected: createDefaultConfig()},
		{Name: "gateway", Expected: gateway},

		{Name: "no_endpoint", WantErr: "endpoint: must be set"},
		{Name: "same_path", WantErr: `logs_url_path: "/v1/logs" is already metrics_url_path`},
		// upstream's nesting, pasted unchanged: the block goes at the top level here.
		{Name: "protocols", WantErr: "invalid keys: protocols"},
	})
}

// The receiver is a drop-in for upstream's protocols.http block: the same
// defaults, so moving a config between the two changes nothing else.
func TestDefaultsAreUpstreams(t *testing.T) {
	up := otlpreceiver.NewFactory().CreateDefaultConfig().(*otlpreceiver.Config)
	// An empty `http:` block takes upstream's defaults for it.
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"protocols": map[string]any{"http": nil}}).Unmarshal(up))
	require.True(t, up.Protocols.HTTP.HasValue())
	assert.Equal(t, *up.Protocols.HTTP.Get(), createDefaultConfig().HTTPConfig)
}
