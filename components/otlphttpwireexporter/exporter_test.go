// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// partialResponse is a partial success rejecting 2 records, as protobuf and
// as JSON.
func partialResponse(t *testing.T) (protoBody, jsonBody []byte) {
	partial := plogotlp.NewExportResponse()
	partial.PartialSuccess().SetRejectedLogRecords(2)
	partial.PartialSuccess().SetErrorMessage("two too old")
	protoBody, err := partial.MarshalProto()
	require.NoError(t, err)
	jsonBody, err = partial.MarshalJSON()
	require.NoError(t, err)
	return protoBody, jsonBody
}

func seqRange(start, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(start + i)
	}
	return out
}

// TestStatuses: without a queue, ConsumeLogs returns what the send returned,
// so each status's mapping is visible directly.
func TestStatuses(t *testing.T) {
	partialBody, _ := partialResponse(t)
	proto := http.Header{"Content-Type": {"application/x-protobuf"}}

	for _, tc := range []struct {
		name      string
		respond   func(int) (int, http.Header, []byte)
		permanent bool
		delivered bool
		warn      string
	}{
		{name: "200", respond: func(int) (int, http.Header, []byte) { return 200, nil, nil }, delivered: true},
		{name: "partial success", respond: func(int) (int, http.Header, []byte) { return 200, proto, partialBody }, delivered: true, warn: "Partial success response"},
		{name: "400 permanent", respond: func(int) (int, http.Header, []byte) { return 400, nil, nil }, permanent: true},
		{name: "413 permanent", respond: func(int) (int, http.Header, []byte) { return 413, nil, nil }, permanent: true},
		{name: "503 Retry-After then 200", respond: func(n int) (int, http.Header, []byte) {
			if n == 0 {
				return 503, http.Header{"Retry-After": {"1"}}, nil
			}
			return 200, nil, nil
		}, delivered: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t)
			b.setRespond(tc.respond)
			core, logs := observer.New(zapcore.InfoLevel)
			exp := startLogs(t, NewFactory(), "x", wireConfig(b), nil, zap.New(core))
			defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
			start := time.Now()
			err := exp.ConsumeLogs(context.Background(), makeLogs(0, 10))
			if tc.permanent {
				require.Error(t, err)
				assert.True(t, consumererror.IsPermanent(err), "%v", err)
				assert.Empty(t, b.delivered())
				b.mu.Lock()
				assert.Equal(t, 1, b.reqs, "a permanent error is not retried")
				b.mu.Unlock()
				return
			}
			require.NoError(t, err)
			assert.Equal(t, seqRange(0, 10), b.delivered())
			if tc.name == "503 Retry-After then 200" {
				assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "Retry-After: 1 honoured")
			}
			if tc.warn != "" {
				w := logs.FilterMessage(tc.warn).All()
				require.Len(t, w, 1)
				assert.Equal(t, int64(2), w[0].ContextMap()["dropped_log_records"])
			}
		})
	}
}

// TestQueuedPermanentErrorIsDroppedAndLogged: with the queue, a 400 is logged
// with the number of records dropped, as upstream's exporterhelper does.
func TestQueuedPermanentErrorIsDroppedAndLogged(t *testing.T) {
	b := newBackend(t)
	b.setRespond(func(int) (int, http.Header, []byte) { return 400, nil, nil })
	core, logs := observer.New(zapcore.InfoLevel)
	cfg := wireConfig(b)
	cfg.QueueConfig = configoptional.Some(exporterhelper.NewDefaultQueueConfig())
	exp := startLogs(t, NewFactory(), "x", cfg, nil, zap.New(core))
	require.NoError(t, exp.ConsumeLogs(context.Background(), makeLogs(0, 10)))
	require.NoError(t, exp.Shutdown(context.Background()))
	dropped := logs.FilterMessageSnippet("Dropping data").All()
	require.Len(t, dropped, 1)
	assert.Equal(t, int64(10), dropped[0].ContextMap()["dropped_items"])
}

// TestHeadersGzipAndMergedBatches: headers and gzip arrive; batching merges
// and splits requests and the backend decodes exactly the records sent, in
// order, in full requests of max_size. Only size flushes a batch (the flush
// timeout never fires within the test, however slow the machine): 900
// records make 9 full batches whatever the timing of the requests.
func TestHeadersGzipAndMergedBatches(t *testing.T) {
	b := newBackend(t)
	cfg := wireConfig(b)
	cfg.ClientConfig.Headers.Set("X-Tenant", configopaque.String("team-a"))
	q := exporterhelper.NewDefaultQueueConfig()
	q.NumConsumers = 1
	q.Sizer = exporterhelper.RequestSizerTypeItems
	q.QueueSize = 100_000
	batch := exporterhelper.NewDefaultBatchConfig()
	batch.Sizer = exporterhelper.RequestSizerTypeItems
	batch.MinSize, batch.MaxSize = 100, 100
	batch.FlushTimeout = time.Hour
	q.Batch = configoptional.Some(batch)
	cfg.QueueConfig = configoptional.Some(q)
	exp := startLogs(t, NewFactory(), "x", cfg, nil, nil)
	n := 0
	for _, size := range []int{37, 1, 250, 63, 99, 2, 448} {
		require.NoError(t, exp.ConsumeLogs(context.Background(), makeLogs(n, size)))
		n += size
	}
	got := b.waitRecords(t, n)
	require.NoError(t, exp.Shutdown(context.Background()))
	assert.Equal(t, seqRange(0, n), got)
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, c := range b.bodies {
		assert.LessOrEqual(t, c, 100, "request %d", i)
	}
	assert.Len(t, b.bodies, 9, "900 records in full batches of 100: %v", b.bodies)
	for _, h := range b.headers {
		assert.Equal(t, "team-a", h.Get("X-Tenant"))
		assert.Equal(t, "gzip", h.Get("Content-Encoding"))
	}
	assert.True(t, slices.IsSorted(got))
}
