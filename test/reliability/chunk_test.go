// SPDX-License-Identifier: Apache-2.0

//go:build reliability

package reliability_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// chunkRecords is more records than the largest fluent-bit chunk measured (23,970
// short lines in one 2 MB chunk). deploy/fluent-bit sets batch_size above it, so a
// chunk travels as one request: fluent-bit 3.1 through 5.1.1 (every release so far)
// drops the records of any request in a chunk but the last that gets a retryable
// status (fluent-bit #12384).
const chunkRecords = 24000

// TestFluentBitChunkIsAcceptedOrRefusedWhole sends whole fluent-bit chunks to the
// gateway while its backend is down, until the persistent queue is full. Each
// request must be accepted whole (200) or refused whole with a status fluent-bit
// retries; the relay's own counters must show no partial acceptance; and once the
// backend is back, the refused chunks sent again arrive exactly once, so a refusal
// left nothing of the chunk behind.
func TestFluentBitChunkIsAcceptedOrRefusedWhole(t *testing.T) {
	var sizer plog.ProtoMarshaler
	size := sizer.LogsSize(otlpfixture.FluentBitChunkLogs(chunkRecords, 0))
	// Room for one and a half chunks in the queue (its bytes sizer counts this
	// same size), so that it fills after a few.
	queueBytes := size + size/2
	r := newRig(t, "", fmt.Sprintf("OTEL_EXPORTER_DEFAULT_QUEUE_BYTES=%d", queueBytes))
	r.start(t)
	r.sink.Refuse(true)
	client := e2e.NewHTTPClient(r.gw.HTTPURL, r.rcv.Client)

	type chunk struct {
		first int64
		body  []byte
	}
	encode := func(i int) chunk {
		first := int64(i * chunkRecords)
		body, _, _, err := otlpfixture.EncodeLogs(otlpfixture.FluentBitChunkLogs(chunkRecords, first), otlpfixture.Encoding{Gzip: true})
		if err != nil {
			t.Fatal(err)
		}
		return chunk{first, body}
	}
	t.Logf("a chunk of %d records is %.2f MiB of OTLP protobuf (%.2f MiB gzip); the queue holds %.2f MiB",
		chunkRecords, e2e.MiB(int64(size)), e2e.MiB(int64(len(encode(0).body))), e2e.MiB(int64(queueBytes)))
	// max_request_body_size in config/gateway.yaml, which also bounds the
	// decompressed body.
	if limit := 8 << 20; size >= limit {
		t.Errorf("a whole chunk is %d bytes of OTLP, more than the receiver's max_request_body_size (%d)", size, limit)
	}

	post := func(c chunk) int {
		t.Helper()
		code, body, err := client.Post(context.Background(), "/v1/logs", c.body, "application/x-protobuf", "gzip")
		if err != nil {
			t.Fatalf("chunk %d: %v", c.first, err)
		}
		if code != http.StatusOK && !e2e.Retryable(code) {
			t.Errorf("chunk %d answered %d (%s): fluent-bit drops a chunk on it", c.first, code, body)
		}
		return code
	}
	// The queue's consumers hold a few requests while they retry, so keep sending
	// until the queue refuses twice.
	var accepted, refused []chunk
	for i := 0; len(refused) < 2 && i < 24; i++ {
		c := encode(i)
		if post(c) == http.StatusOK {
			accepted = append(accepted, c)
		} else {
			refused = append(refused, c)
		}
	}
	if len(accepted) == 0 || len(refused) == 0 {
		t.Fatalf("%d chunks accepted, %d refused: the queue bound did not split the run", len(accepted), len(refused))
	}

	m, err := e2e.ScrapeSelfMetrics(r.gw.MetricsAddr)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := m.Sum("otelcol_receiver_accepted_log_records", nil)
	refusedRecs, _ := m.Sum("otelcol_receiver_refused_log_records", nil)
	failedRecs, _ := m.Sum("otelcol_receiver_failed_log_records", nil)
	t.Logf("%d chunks accepted, %d refused; receiver counters: accepted %.0f, refused %.0f, failed %.0f",
		len(accepted), len(refused), got, refusedRecs, failedRecs)
	if want := float64(len(accepted) * chunkRecords); got != want {
		t.Errorf("receiver accepted %.0f log records, want %.0f (whole chunks answered 200 only)", got, want)
	}
	if want := float64(len(refused) * chunkRecords); refusedRecs+failedRecs != want {
		t.Errorf("receiver refused/failed %.0f log records, want %.0f (whole chunks answered %s)",
			refusedRecs+failedRecs, want, http.StatusText(http.StatusServiceUnavailable))
	}

	// The backend is back: the queue drains, and what was refused is sent again as
	// fluent-bit would, until accepted.
	r.sink.Refuse(false)
	deadline := time.Now().Add(2 * time.Minute)
	for _, c := range refused {
		for post(c) != http.StatusOK {
			if time.Now().After(deadline) {
				t.Fatalf("chunk %d still refused two minutes after the backend came back", c.first)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	var acked []int64
	for i := range int64((len(accepted) + len(refused)) * chunkRecords) {
		acked = append(acked, i)
	}
	rep := expectDelivered(t, r.sink, acked, 2*time.Minute)
	if rep.Duplicated != 0 {
		t.Errorf("%d records arrived twice: a refused chunk left part of itself in the queue", rep.Duplicated)
	}
}
