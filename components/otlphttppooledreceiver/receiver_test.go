// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// One config is one server, whichever signals use it, and a config loaded
// again after Shutdown (a reload) gets a new one on the same port.
func TestOneServerPerConfigAndRestart(t *testing.T) {
	ctx := context.Background()
	f := NewFactory()
	for round := range 2 {
		cfg := createDefaultConfig()
		cfg.ServerConfig.NetAddr.Endpoint = "127.0.0.1:0"
		if round == 1 {
			cfg.ServerConfig.NetAddr.Endpoint = freeAddr(t)
		}
		set := receivertest.NewNopSettings(f.Type())
		logs := new(consumertest.LogsSink)
		lr, err := f.CreateLogs(ctx, set, cfg, logs)
		require.NoError(t, err)
		mr, err := f.CreateMetrics(ctx, set, cfg, consumertest.NewNop())
		require.NoError(t, err)
		require.Same(t, lr, mr, "both signals of one config share the receiver")

		require.NoError(t, lr.Start(ctx, componenttest.NewNopHost()))
		require.NoError(t, mr.Start(ctx, componenttest.NewNopHost()), "the second Start is a no-op, not a second listener")
		if round == 1 {
			body, merr := plogotlp.NewExportRequestFromLogs(sampleLogs(5)).MarshalProto()
			require.NoError(t, merr)
			resp, perr := http.Post("http://"+cfg.ServerConfig.NetAddr.Endpoint+"/v1/logs", "application/x-protobuf", bytes.NewReader(body))
			require.NoError(t, perr)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, 5, logs.LogRecordCount())
		}
		require.NoError(t, lr.Shutdown(ctx))
		require.NoError(t, mr.Shutdown(ctx))

		again, err := f.CreateLogs(ctx, set, cfg, logs)
		require.NoError(t, err)
		assert.NotSame(t, lr, again, "a config created after Shutdown gets a fresh receiver")
		require.NoError(t, again.Shutdown(ctx))
	}
}

func TestStartFailsOnAPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	cfg := createDefaultConfig()
	cfg.ServerConfig.NetAddr.Endpoint = ln.Addr().String()
	f := NewFactory()
	r, err := f.CreateLogs(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, consumertest.NewNop())
	require.NoError(t, err)
	err = r.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, ln.Addr().String())
	assert.NoError(t, r.Shutdown(context.Background()))
}
