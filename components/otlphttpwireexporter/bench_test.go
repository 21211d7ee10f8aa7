// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter/internal/metadata"
	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension/queuestoragetest"
)

// fluentBitLogs is a fluent-bit-shaped request: n records of about 1 KB.
func fluentBitLogs(n int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("k8s.namespace.name", "payments")
	rl.Resource().Attributes().PutStr("k8s.pod.name", "api-7d9f8b6c5-x2x9z")
	rl.Resource().Attributes().PutStr("k8s.container.name", "api")
	sl := rl.ScopeLogs().AppendEmpty()
	line := strings.Repeat("GET /api/v1/orders/12345 200 0.003s user-agent=Mozilla/5.0 ", 15)
	for i := range n {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + 1000*i))
		lr.Body().SetStr(line)
		lr.Attributes().PutStr("stream", "stdout")
		lr.Attributes().PutStr("logtag", "F")
	}
	return ld
}

// receiverContext is the context a request reaches the exporter with in the
// gateway: the receiver's client.Info with the peer's address (which
// k8s_attributes reads), no metadata (include_metadata is off) and no valid
// span (the collector's own traces are off).
func receiverContext() context.Context {
	return client.NewContext(context.Background(), client.Info{Addr: &net.TCPAddr{IP: net.IPv4(10, 42, 0, 17), Port: 52344}})
}

// BenchmarkConsumeAndSend compares otlp_http_wire with otlp_http on the same
// records, the same TLS server and the same queue settings (batches of 2000
// records), without compression (so that the exporters' own work shows) and
// with gzip (the default), with an in-memory queue and with a persistent one
// on queue_storage. It
// reports wall ns/record and process CPU ns/record (which includes the
// server's TLS, body reading and gunzip, the same for both).
func BenchmarkConsumeAndSend(b *testing.B) {
	const perRequest = 100
	ld := fluentBitLogs(perRequest)
	reqBytes, _ := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()

	var received atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			body = zr
		}
		n, _ := io.Copy(io.Discard, body)
		received.Add(n)
	}))
	defer srv.Close()
	caFile := writeCA(b, srv)

	for _, queue := range []string{"memory", "queue_storage"} {
		for _, compression := range []string{"none", "gzip"} {
			for _, kind := range []string{"otlp_http", "otlp_http_wire"} {
				b.Run(queue+"/"+compression+"/"+kind, func(b *testing.B) {
					q := exporterhelper.NewDefaultQueueConfig()
					q.BlockOnOverflow = true
					batch := exporterhelper.NewDefaultBatchConfig()
					batch.MinSize, batch.MaxSize = 2000, 2000
					q.Batch = configoptional.Some(batch)
					host := componenttest.NewNopHost()
					if queue == "queue_storage" {
						q.StorageID = &storageID
						host, _ = queuestoragetest.Start(b, b.TempDir())
					}
					client := confighttp.NewDefaultClientConfig()
					client.Endpoint = srv.URL
					client.TLS.CAFile = caFile
					client.Compression = configcompression.Type(compression)
					var f exporter.Factory
					var cfg component.Config
					if kind == "otlp_http" {
						f = otlphttpexporter.NewFactory()
						c := f.CreateDefaultConfig().(*otlphttpexporter.Config)
						c.ClientConfig, c.QueueConfig = client, configoptional.Some(q)
						cfg = c
					} else {
						f = NewFactory()
						c := f.CreateDefaultConfig().(*Config)
						c.ClientConfig, c.QueueConfig = client, configoptional.Some(q)
						cfg = c
					}
					exp := startLogs(b, f, "bench", cfg, host, nil)
					ctx := receiverContext()
					want := received.Load() + int64(b.N)*int64(len(reqBytes))
					// Process CPU: collect the previous variant's garbage before
					// and this one's before reading, so each pays for its own GC.
					runtime.GC()
					cpu0 := cpuTime()
					b.ResetTimer()
					start := time.Now()
					for range b.N {
						req := plog.NewLogs()
						ld.CopyTo(req)
						if err := exp.ConsumeLogs(ctx, req); err != nil {
							b.Fatal(err)
						}
					}
					for received.Load() < want {
						time.Sleep(time.Millisecond)
					}
					elapsed := time.Since(start)
					b.StopTimer()
					records := float64(b.N * perRequest)
					b.ReportMetric(float64(elapsed.Nanoseconds())/records, "ns/record")
					b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/records, "cpu-ns/record")
					if err := exp.Shutdown(context.Background()); err != nil {
						b.Fatal(err)
					}
				})
			}
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// variedLogs is n access-log-like records whose fields vary (addresses,
// ids, latencies, a trace id): less compressible than fluentBitLogs' one
// repeated line.
func variedLogs(rng *rand.Rand, n int) plog.Logs {
	ld := fluentBitLogs(0)
	sl := ld.ResourceLogs().At(0).ScopeLogs().At(0)
	paths := []string{"/api/v1/orders", "/api/v1/users", "/healthz", "/api/v2/payments/authorize", "/static/app.js"}
	for i := range n {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + 1000*i))
		lr.Body().SetStr(fmt.Sprintf(`10.%d.%d.%d - - [01/Dec/2026:03:%02d:%02d +0000] "GET %s/%d HTTP/1.1" %d %d "-" "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36" rt=%.3f uct=%.3f trace_id=%016x%016x span_id=%016x user=%d`,
			rng.IntN(256), rng.IntN(256), rng.IntN(256), rng.IntN(60), rng.IntN(60), paths[rng.IntN(len(paths))], rng.IntN(1_000_000),
			[]int{200, 200, 200, 201, 204, 304, 404, 500}[rng.IntN(8)], rng.IntN(100_000), rng.Float64(), rng.Float64()/10,
			rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.IntN(100_000)))
		lr.Attributes().PutStr("stream", "stdout")
		lr.Attributes().PutStr("logtag", "F")
	}
	return ld
}

// BenchmarkGzip compares the two gzip paths on one batch as the exporter
// sends it at saturation (2000 records, 20 chunks of 100): confighttp's round
// tripper with the standard library's compress/gzip (the path before) and the
// exporter's own klauspost/compress/gzip, at the default level and at 1, on
// fluent-bit-shaped records (one repeated line) and on varied access-log
// lines. An op is one push to a plain-HTTP local server that discards the
// body; body-bytes is the compressed size.
func BenchmarkGzip(b *testing.B) {
	var bodyBytes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		bodyBytes.Store(n)
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL + "/v1/logs")
	require.NoError(b, err)
	rng := rand.New(rand.NewPCG(1, 1))
	data := map[string]func() plog.Logs{
		"fluent-bit": func() plog.Logs { return fluentBitLogs(100) },
		"varied":     func() plog.Logs { return variedLogs(rng, 100) },
	}
	for _, name := range []string{"fluent-bit", "varied"} {
		req := newWireRequest(logsSignal)
		for range 20 {
			r, err := logsFromPdata(data[name]())
			require.NoError(b, err)
			req.appendFrom(r)
		}
		for _, level := range []int{0, 1} {
			for _, path := range []string{"confighttp-stdlib", "exporter-klauspost"} {
				b.Run(fmt.Sprintf("%s/level=%d/%s", name, level, path), func(b *testing.B) {
					cfg := NewFactory().CreateDefaultConfig().(*Config)
					cfg.ClientConfig.Endpoint = srv.URL
					cfg.ClientConfig.CompressionParams.Level = configcompression.Level(level)
					e := newWireExporter(cfg, exportertest.NewNopSettings(metadata.Type), logsSignal, u)
					require.NoError(b, e.start(context.Background(), componenttest.NewNopHost()))
					if path == "confighttp-stdlib" {
						e.gzip = nil // compression: gzip stays on the client: its round tripper compresses
					}
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						if err := e.push(context.Background(), req); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					b.ReportMetric(float64(bodyBytes.Load()), "body-bytes")
					b.ReportMetric(float64(req.bytes), "raw-bytes")
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*req.items), "ns/record")
				})
			}
		}
	}
}

// BenchmarkQueueEncoding measures the queue item's encoding for a
// fluent-bit request of 100 records and a metrics request of 1000 data
// points, with the context a receiver passes: intake (the pdata encode,
// which makes the item), Marshal of a request as it comes from intake (the
// item handed over), Marshal of a merged request (a new item, a copy) and
// Unmarshal; intake/plain and unmarshal/bare are the previous release's
// paths (no context, no item header).
// ns/record is per log record or data point.
func BenchmarkQueueEncoding(b *testing.B) {
	ctx := receiverContext()
	logs := fluentBitLogs(100)
	metrics := makeMetrics(50, 20)
	intake := map[*signal]func() (*wireRequest, error){
		logsSignal:    func() (*wireRequest, error) { return logsRequest(ctx, logs) },
		metricsSignal: func() (*wireRequest, error) { return metricsRequest(ctx, metrics) },
	}
	// the plain encode (no context, no item), as intake was before
	plain := map[*signal]func() (*wireRequest, error){
		logsSignal:    func() (*wireRequest, error) { return logsFromPdata(logs) },
		metricsSignal: func() (*wireRequest, error) { return metricsFromPdata(metrics) },
	}
	for _, sig := range []*signal{logsSignal, metricsSignal} {
		r, err := intake[sig]()
		require.NoError(b, err)
		enc := queueEncoding{sig: sig}
		item, err := enc.Marshal(ctx, r)
		require.NoError(b, err)
		merged := newWireRequest(sig)
		merged.appendFrom(r)
		bare := r.chunks[0] // the previous release's item: read without context
		for _, tc := range []struct {
			name string
			op   func() error
		}{
			{"intake", func() error { _, err := intake[sig](); return err }},
			{"intake/plain", func() error { _, err := plain[sig](); return err }},
			{"marshal/intake", func() error { _, err := enc.Marshal(ctx, r); return err }},
			{"marshal/merged", func() error { _, err := enc.Marshal(ctx, merged); return err }},
			{"unmarshal", func() error { _, _, err := enc.Unmarshal(item); return err }},
			{"unmarshal/bare", func() error { _, _, err := enc.Unmarshal(bare); return err }},
		} {
			b.Run(sig.name+"/"+tc.name, func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					if err := tc.op(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*r.items), "ns/record")
			})
		}
	}
}
