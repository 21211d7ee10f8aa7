// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter/internal/metadata"
)

// sendWith sends records through an exporter with compression c at level
// and returns what the backend (the standard library's gzip reader, or
// zstd's) decoded and the Content-Encoding of every request it got.
func sendWith(t *testing.T, b *backend, c configcompression.Type, level int, records int) ([]int64, []string) {
	t.Helper()
	cfg := wireConfig(b)
	cfg.ClientConfig.Compression = c
	cfg.ClientConfig.CompressionParams.Level = configcompression.Level(level)
	require.NoError(t, confmap.Validate(cfg))
	exp := startLogs(t, NewFactory(), "x", cfg, nil, nil)
	require.NoError(t, exp.ConsumeLogs(context.Background(), makeLogs(0, records)))
	require.NoError(t, exp.Shutdown(context.Background()))
	b.mu.Lock()
	defer b.mu.Unlock()
	var enc []string
	for _, h := range b.headers {
		enc = append(enc, h.Get("Content-Encoding"))
	}
	return append([]int64(nil), b.seqs...), enc
}

// Every gzip level the configuration accepts delivers the same records, once
// compressed (a second compression by confighttp would not decode).
func TestGzipLevels(t *testing.T) {
	for _, level := range []int{0, -1, -2, 1, 5, 6, 9} {
		t.Run(strconv.Itoa(level), func(t *testing.T) {
			got, enc := sendWith(t, newBackend(t), configcompression.TypeGzip, level, 500)
			assert.Equal(t, seqRange(0, 500), got)
			assert.Equal(t, []string{"gzip"}, enc)
		})
	}
}

// The other compressions are still confighttp's.
func TestOtherCompressionsGoThroughConfighttp(t *testing.T) {
	for _, c := range []configcompression.Type{"none", configcompression.TypeZstd} {
		got, enc := sendWith(t, newBackend(t), c, 0, 300)
		assert.Equal(t, seqRange(0, 300), got, c)
		want := string(c)
		if c == "none" {
			want = ""
		}
		assert.Equal(t, []string{want}, enc, c)
	}
}

// A redirect re-sends the compressed body (GetBody), gzip still declared.
func TestGzipBodyFollowsRedirect(t *testing.T) {
	b := newBackend(t)
	b.setRespond(func(n int) (int, http.Header, []byte) {
		if n == 0 {
			return http.StatusTemporaryRedirect, http.Header{"Location": {b.srv.URL + "/v1/logs?again"}}, nil
		}
		return http.StatusOK, nil, nil
	})
	got, enc := sendWith(t, b, configcompression.TypeGzip, 0, 200)
	assert.Equal(t, seqRange(0, 200), got)
	assert.Equal(t, []string{"gzip", "gzip"}, enc)
}

func TestGzipLevelRefused(t *testing.T) {
	for _, level := range []int{10, -3} {
		cfg := NewFactory().CreateDefaultConfig().(*Config)
		cfg.ClientConfig.Endpoint = "https://a.example"
		cfg.ClientConfig.CompressionParams.Level = configcompression.Level(level)
		require.ErrorContains(t, confmap.Validate(cfg), fmt.Sprintf("compression_params.level: %d is not a gzip level", level))
	}
	// zstd has levels of its own: not gzip's business
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = "https://a.example"
	cfg.ClientConfig.Compression = configcompression.TypeZstd
	cfg.ClientConfig.CompressionParams.Level = 11
	assert.NoError(t, confmap.Validate(cfg))
}

// The exporter compresses gzip itself (confighttp's round tripper then sees
// Content-Encoding and passes the body through), chunks one after the other.
func TestExporterCompressesGzipItself(t *testing.T) {
	b := newBackend(t)
	cfg := wireConfig(b)
	e := newWireExporter(cfg, exportertest.NewNopSettings(metadata.Type), logsSignal, mustParse(t, b.srv.URL+"/v1/logs"))
	require.NoError(t, e.start(context.Background(), componenttest.NewNopHost()))
	r := logsReq(t, 0, 100)
	r.appendFrom(logsReq(t, 100, 50))
	for range 3 { // a pooled writer gives the same bytes
		hreq, err := e.newRequest(context.Background(), r)
		require.NoError(t, err)
		assert.Equal(t, "gzip", hreq.Header.Get("Content-Encoding"))
		for _, body := range []func() (io.ReadCloser, error){func() (io.ReadCloser, error) { return hreq.Body, nil }, hreq.GetBody} {
			rc, err := body()
			require.NoError(t, err)
			zr, err := gzip.NewReader(rc)
			require.NoError(t, err)
			raw, err := io.ReadAll(zr)
			require.NoError(t, err)
			assert.Equal(t, bytes.Join(r.chunks, nil), raw)
		}
		assert.Positive(t, hreq.ContentLength)
	}
	// none: the chunks as they are, no Content-Encoding
	cfg.ClientConfig.Compression = "none"
	e = newWireExporter(cfg, exportertest.NewNopSettings(metadata.Type), logsSignal, mustParse(t, b.srv.URL+"/v1/logs"))
	require.NoError(t, e.start(context.Background(), componenttest.NewNopHost()))
	hreq, err := e.newRequest(context.Background(), r)
	require.NoError(t, err)
	assert.Empty(t, hreq.Header.Get("Content-Encoding"))
	raw, err := io.ReadAll(hreq.Body)
	require.NoError(t, err)
	assert.Equal(t, bytes.Join(r.chunks, nil), raw)
}

func mustParse(t testing.TB, s string) *url.URL {
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// Idle writers outlive garbage collections (a sync.Pool's did not, and at
// 10,000 records/s most exports built a 1 MB writer), and each body is the
// gzip of its own chunks only.
func TestGzipWritersAreKeptAcrossGC(t *testing.T) {
	c, err := newGzipCompressor(0, 2)
	require.NoError(t, err)
	unzip := func(body []byte) string {
		zr, zerr := gzip.NewReader(bytes.NewReader(body))
		require.NoError(t, zerr)
		out, rerr := io.ReadAll(zr)
		require.NoError(t, rerr)
		return string(out)
	}
	first, err := c.compress([][]byte{[]byte("first "), []byte("body")}, 10)
	require.NoError(t, err)
	require.Len(t, c.writers, 1)
	kept := <-c.writers
	c.writers <- kept
	runtime.GC()
	runtime.GC()
	second, err := c.compress([][]byte{[]byte("second")}, 6)
	require.NoError(t, err)
	require.Len(t, c.writers, 1)
	assert.Same(t, kept, <-c.writers, "the writer of the first body compressed the second, after two collections")
	assert.Equal(t, "first body", unzip(first))
	assert.Equal(t, "second", unzip(second))
}
