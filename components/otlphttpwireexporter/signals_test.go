// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter/internal/metadata"
)

// Metrics and traces go to their own paths, batched and split like logs.
func TestMetricsAndTraces(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	maxPerReq := map[string]int{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var n int
		var err error
		switch r.URL.Path {
		case "/v1/metrics":
			req := pmetricotlp.NewExportRequest()
			err = req.UnmarshalProto(body)
			n = req.Metrics().DataPointCount()
		case "/v1/traces":
			req := ptraceotlp.NewExportRequest()
			err = req.UnmarshalProto(body)
			n = req.Traces().SpanCount()
		default:
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		got[r.URL.Path] += n
		maxPerReq[r.URL.Path] = max(maxPerReq[r.URL.Path], n)
		mu.Unlock()
	}))
	defer srv.Close()
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.URL
	cfg.ClientConfig.TLS.CAFile = writeCA(t, srv)
	cfg.ClientConfig.Compression = "none" // gzip is covered with logs
	q := exporterhelper.NewDefaultQueueConfig()
	batch := exporterhelper.NewDefaultBatchConfig()
	batch.MinSize, batch.MaxSize, batch.FlushTimeout = 7, 7, 20*time.Millisecond
	q.Batch = configoptional.Some(batch)
	cfg.QueueConfig = configoptional.Some(q)

	set := exportertest.NewNopSettings(metadata.Type)
	me, err := NewFactory().CreateMetrics(context.Background(), set, cfg)
	require.NoError(t, err)
	te, err := NewFactory().CreateTraces(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, me.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, te.Start(context.Background(), componenttest.NewNopHost()))

	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	for range 30 {
		ss.Spans().AppendEmpty().SetName("span")
	}
	require.NoError(t, me.ConsumeMetrics(context.Background(), makeMetrics(4, 5)))
	require.NoError(t, te.ConsumeTraces(context.Background(), td))
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got["/v1/metrics"] == 20 && got["/v1/traces"] == 30
	}, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, me.Shutdown(context.Background()))
	require.NoError(t, te.Shutdown(context.Background()))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]int{"/v1/metrics": 7, "/v1/traces": 7}, maxPerReq)
}
