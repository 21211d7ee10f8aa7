// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

func sameRecord(t *testing.T, seq int64, want, got plog.LogRecord, wantRes, gotRes pcommon.Resource) {
	t.Helper()
	if g, w := got.Body().AsRaw(), want.Body().AsRaw(); fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("seq %d: body %v, want %v", seq, g, w)
	}
	if g, w := got.Attributes().AsRaw(), want.Attributes().AsRaw(); fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("seq %d: attributes %v, want %v", seq, g, w)
	}
	if g, w := gotRes.Attributes().AsRaw(), wantRes.Attributes().AsRaw(); fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("seq %d: resource %v, want %v", seq, g, w)
	}
	if got.SeverityNumber() != want.SeverityNumber() || got.SeverityText() != want.SeverityText() {
		t.Errorf("seq %d: severity %v/%q, want %v/%q", seq, got.SeverityNumber(), got.SeverityText(), want.SeverityNumber(), want.SeverityText())
	}
	if got.Timestamp() != want.Timestamp() || got.ObservedTimestamp() != want.ObservedTimestamp() {
		t.Errorf("seq %d: timestamps %v/%v, want %v/%v", seq, got.Timestamp(), got.ObservedTimestamp(), want.Timestamp(), want.ObservedTimestamp())
	}
}

// recordsBySeq indexes every received log record (with its resource) by SeqAttr.
func recordsBySeq(lds []plog.Logs) map[int64][]struct {
	lr  plog.LogRecord
	res pcommon.Resource
} {
	out := map[int64][]struct {
		lr  plog.LogRecord
		res pcommon.Resource
	}{}
	for _, ld := range lds {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			for j := 0; j < rl.ScopeLogs().Len(); j++ {
				lrs := rl.ScopeLogs().At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					if v, ok := lrs.At(k).Attributes().Get(otlpfixture.SeqAttr); ok {
						out[v.Int()] = append(out[v.Int()], struct {
							lr  plog.LogRecord
							res pcommon.Resource
						}{lrs.At(k), rl.Resource()})
					}
				}
			}
		}
	}
	return out
}

func TestLogsArriveUnchanged(t *testing.T) {
	r := startRelay(t)
	ctx := context.Background()
	cc := r.dialGRPC(t)
	client := e2e.NewHTTPClient(r.httpURL, nil)

	const perVariant = 250
	type variant struct {
		name string
		send func(plog.Logs) error
	}
	variants := []variant{
		{"grpc", func(ld plog.Logs) error { return otlpfixture.SendLogsGRPC(ctx, cc, ld) }},
		{"http-protobuf", func(ld plog.Logs) error { return client.SendLogs(ctx, ld, otlpfixture.Encoding{}) }},
		{"http-protobuf-gzip", func(ld plog.Logs) error { return client.SendLogs(ctx, ld, otlpfixture.Encoding{Gzip: true}) }},
		{"http-json", func(ld plog.Logs) error { return client.SendLogs(ctx, ld, otlpfixture.Encoding{JSON: true}) }},
		{"http-json-gzip", func(ld plog.Logs) error {
			return client.SendLogs(ctx, ld, otlpfixture.Encoding{JSON: true, Gzip: true})
		}},
	}
	sent := map[int64]plog.Logs{}
	for i, v := range variants {
		first := int64(i * perVariant)
		ld := otlpfixture.FluentBitLogs(perVariant, first)
		// Tag each variant so a mix-up between them would show.
		ld.ResourceLogs().At(0).Resource().Attributes().PutStr("test.variant", v.name)
		if err := v.send(ld); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		for s := first; s < first+perVariant; s++ {
			sent[s] = ld
		}
	}
	total := perVariant * len(variants)
	r.sink.WaitForLogRecords(t, total, time.Minute)
	time.Sleep(500 * time.Millisecond) // anything extra would be a duplicate
	if n := r.sink.LogRecordCount(); n != total {
		t.Fatalf("sink got %d records, want exactly %d", n, total)
	}
	got := recordsBySeq(r.sink.Logs())
	for seq, ld := range sent {
		recs := got[seq]
		if len(recs) != 1 {
			t.Fatalf("seq %d arrived %d times", seq, len(recs))
		}
		idx := int(seq % perVariant)
		want := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(idx)
		sameRecord(t, seq, want, recs[0].lr, ld.ResourceLogs().At(0).Resource(), recs[0].res)
	}
}

func testMetrics(variant string) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "checkout")
	rm.Resource().Attributes().PutStr("test.variant", variant)
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	ts := pcommon.NewTimestampFromTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	start := pcommon.NewTimestampFromTime(time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC))

	g := ms.AppendEmpty()
	g.SetName("queue_depth")
	g.SetUnit("{item}")
	dp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(ts)
	dp.SetDoubleValue(42.5)
	dp.Attributes().PutStr("queue", "audit")

	s := ms.AppendEmpty()
	s.SetName("requests_total")
	sum := s.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	sdp := sum.DataPoints().AppendEmpty()
	sdp.SetStartTimestamp(start)
	sdp.SetTimestamp(ts)
	sdp.SetIntValue(1234)

	h := ms.AppendEmpty()
	h.SetName("latency_seconds")
	hist := h.SetEmptyHistogram()
	hist.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hdp := hist.DataPoints().AppendEmpty()
	hdp.SetStartTimestamp(start)
	hdp.SetTimestamp(ts)
	hdp.SetCount(10)
	hdp.SetSum(2.5)
	hdp.ExplicitBounds().FromRaw([]float64{0.1, 0.5, 1})
	hdp.BucketCounts().FromRaw([]uint64{4, 3, 2, 1})
	return md
}

func TestMetricsArriveUnchanged(t *testing.T) {
	r := startRelay(t)
	ctx := context.Background()
	cc := r.dialGRPC(t)
	if _, err := pmetricotlp.NewGRPCClient(cc).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(testMetrics("grpc"))); err != nil {
		t.Fatal(err)
	}
	client := e2e.NewHTTPClient(r.httpURL, nil)
	for _, v := range []struct {
		name string
		json bool
	}{{"http-protobuf", false}, {"http-json", true}} {
		req := pmetricotlp.NewExportRequestFromMetrics(testMetrics(v.name))
		var body []byte
		var err error
		ct := "application/x-protobuf"
		if v.json {
			body, err = req.MarshalJSON()
			ct = "application/json"
		} else {
			body, err = req.MarshalProto()
		}
		if err != nil {
			t.Fatal(err)
		}
		code, resp, err := client.Post(ctx, "/v1/metrics", body, ct, "")
		if err != nil || code != http.StatusOK {
			t.Fatalf("%s: %d %s %v", v.name, code, resp, err)
		}
	}
	r.sink.WaitForDataPoints(t, 9, time.Minute)

	want := testMetrics("")
	wantMs := want.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	seen := map[string]int{}
	for _, md := range r.sink.Metrics() {
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			rm := md.ResourceMetrics().At(i)
			variant, _ := rm.Resource().Attributes().Get("test.variant")
			ms := rm.ScopeMetrics().At(0).Metrics()
			for j := 0; j < ms.Len(); j++ {
				m := ms.At(j)
				seen[variant.Str()+"/"+m.Name()]++
				for k := 0; k < wantMs.Len(); k++ {
					w := wantMs.At(k)
					if w.Name() != m.Name() {
						continue
					}
					if m.Type() != w.Type() || m.Unit() != w.Unit() {
						t.Errorf("%s %s: type %v unit %q, want %v %q", variant.Str(), m.Name(), m.Type(), m.Unit(), w.Type(), w.Unit())
					}
					// Data points compared through their JSON form: values,
					// timestamps, attributes, bounds and bucket counts at once.
					gotJSON, _ := (&pmetric.JSONMarshaler{}).MarshalMetrics(single(m))
					wantJSON, _ := (&pmetric.JSONMarshaler{}).MarshalMetrics(single(w))
					if !bytes.Equal(gotJSON, wantJSON) {
						t.Errorf("%s %s:\n got %s\nwant %s", variant.Str(), m.Name(), gotJSON, wantJSON)
					}
				}
			}
		}
	}
	for _, v := range []string{"grpc", "http-protobuf", "http-json"} {
		for k := 0; k < wantMs.Len(); k++ {
			if n := seen[v+"/"+wantMs.At(k).Name()]; n != 1 {
				t.Errorf("%s/%s arrived %d times, want 1", v, wantMs.At(k).Name(), n)
			}
		}
	}
}

// single wraps one metric in a Metrics with no resource, for comparison.
func single(m pmetric.Metric) pmetric.Metrics {
	md := pmetric.NewMetrics()
	m.CopyTo(md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty())
	return md
}

func TestGracefulStopLosesNothingAcknowledged(t *testing.T) {
	r := startRelay(t)
	client := e2e.NewHTTPClient(r.httpURL, nil)

	var (
		mu    sync.Mutex
		acked []int64
		next  atomic.Int64
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	const batch = 50
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				first := next.Add(batch) - batch
				if err := client.SendLogs(context.Background(), otlpfixture.FluentBitLogs(batch, first), otlpfixture.Encoding{Gzip: true}); err != nil {
					continue // refused or cut off by the shutdown: not acknowledged
				}
				mu.Lock()
				for s := first; s < first+batch; s++ {
					acked = append(acked, s)
				}
				mu.Unlock()
			}
		}()
	}
	// Let data flow, then stop the collector in the middle of the stream.
	deadline := time.Now().Add(30 * time.Second)
	for r.sink.LogRecordCount() < 2000 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := r.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := r.Wait(time.Minute)
	stop.Store(true)
	wg.Wait()
	if err != nil || code != 0 {
		t.Fatalf("SIGTERM: exit %d, %v", code, err)
	}

	mu.Lock()
	defer mu.Unlock()
	rep := r.sink.Loss(acked)
	t.Logf("graceful stop: %s (offered %d)", rep, next.Load())
	if len(acked) < 2000 {
		t.Fatalf("only %d records acknowledged before the stop: the test did not load the collector", len(acked))
	}
	if rep.Missing != 0 || rep.Duplicated != 0 {
		t.Fatalf("graceful stop lost or duplicated acknowledged data: %s", rep)
	}
	for seq := range r.sink.SeqCounts() {
		if seq < 0 || seq >= next.Load() {
			t.Fatalf("sink got seq %d that was never sent", seq)
		}
	}
}
