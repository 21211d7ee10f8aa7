// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// A reader goes back to the pool when the body is closed, however often, and
// the next body gets it, reset: what it decompresses is that body only.
func TestGunzipReaderIsReusedAfterClose(t *testing.T) {
	p := newGunzipPool()
	for i, want := range [][]byte{bytes.Repeat([]byte("first "), 10000), []byte("second")} {
		body, err := p.decoder(io.NopCloser(bytes.NewReader(gz(t, want))))
		require.NoError(t, err)
		if i == 1 {
			assert.Empty(t, p.free, "the second body takes the first body's reader")
		}
		got, err := io.ReadAll(body)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		require.NoError(t, body.Close())
		require.NoError(t, body.Close(), "closed twice: the handler and confighttp both close")
		assert.Len(t, p.free, 1, "closed twice, pooled once")
		n, err := body.Read(make([]byte, 1))
		assert.Zero(t, n)
		assert.ErrorIs(t, err, errGunzipClosed, "a closed body must not read the reader another request now has")
	}
}

// A body that is not gzip is refused with gzip's own error, and its reader
// serves the next request.
func TestGunzipBadHeader(t *testing.T) {
	p := newGunzipPool()
	_, err := p.decoder(io.NopCloser(bytes.NewReader([]byte("not gzip at all"))))
	require.EqualError(t, err, "gzip: invalid header")
	assert.Len(t, p.free, 1)
	body, err := p.decoder(io.NopCloser(bytes.NewReader(gz(t, []byte("fine")))))
	require.NoError(t, err)
	got, err := io.ReadAll(body)
	require.NoError(t, err)
	assert.Equal(t, "fine", string(got))
}

// The free list is bounded: readers closed beyond it are left to the GC.
func TestGunzipPoolIsBounded(t *testing.T) {
	p := newGunzipPool()
	var open []io.ReadCloser
	for range keptBuffers + 3 {
		body, err := p.decoder(io.NopCloser(bytes.NewReader(gz(t, []byte("x")))))
		require.NoError(t, err)
		open = append(open, body)
	}
	for _, b := range open {
		require.NoError(t, b.Close())
	}
	assert.Len(t, p.free, keptBuffers)
}

// The receiver decompresses gzip with the pool, and only where
// compression_algorithms has gzip: confighttp adds a WithDecoder decoder
// whatever the list says.
func TestReceiverGunzipFollowsCompressionAlgorithms(t *testing.T) {
	body, err := plogotlp.NewExportRequestFromLogs(sampleLogs(5)).MarshalProto()
	require.NoError(t, err)
	for _, tc := range []struct {
		name       string
		algorithms []string
		status     int
		pooled     int
	}{
		{"default list", nil, http.StatusOK, 1},
		{"gzip listed", []string{"gzip"}, http.StatusOK, 1},
		{"gzip not listed", []string{"", "zstd"}, http.StatusBadRequest, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := createDefaultConfig()
			cfg.ServerConfig.NetAddr.Endpoint = freeAddr(t)
			cfg.ServerConfig.CompressionAlgorithms = tc.algorithms
			f := NewFactory()
			rec := &recorder{}
			lr, err := f.CreateLogs(ctx, receivertest.NewNopSettings(f.Type()), cfg, rec.logs())
			require.NoError(t, err)
			require.NoError(t, lr.Start(ctx, componenttest.NewNopHost()))
			t.Cleanup(func() { assert.NoError(t, lr.Shutdown(context.Background())) })
			x := exchange{method: http.MethodPost, path: "/v1/logs", contentType: "application/x-protobuf", contentEncoding: "gzip", body: gz(t, body)}
			for range 2 {
				assert.Equal(t, tc.status, send(t, "http://"+cfg.ServerConfig.NetAddr.Endpoint, x, rec).status)
			}
			assert.Len(t, lr.(*pooledReceiver).gunzip.free, tc.pooled)
		})
	}
}

// Without gzip in compression_algorithms, gzip is refused as upstream refuses it.
func TestSameResponsesAsUpstreamWithoutGzip(t *testing.T) {
	upURL, ourURL, up, ours := startPairWith(t, 1<<20, []string{"", "zstd"})
	logs, err := plogotlp.NewExportRequestFromLogs(sampleLogs(3)).MarshalProto()
	require.NoError(t, err)
	sameAnswers(t, upURL, ourURL, up, ours, []exchange{
		{name: "gzip", method: http.MethodPost, path: "/v1/logs", contentType: "application/x-protobuf", contentEncoding: "gzip", body: gz(t, logs)},
		{name: "plain", method: http.MethodPost, path: "/v1/logs", contentType: "application/x-protobuf", body: logs},
	})
}
