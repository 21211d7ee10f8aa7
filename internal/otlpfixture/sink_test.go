// SPDX-License-Identifier: Apache-2.0

package otlpfixture

import (
	"bytes"
	"context"
	"net/http"
	"testing"
)

// TestSinkCountsSequences sends records twice, and some never, to a sink in
// each mode: Loss must agree, and FirstArrival is kept with MaxSeq.
func TestSinkCountsSequences(t *testing.T) {
	for _, maxSeq := range []int64{0, 100} {
		s := NewSink(t, SinkOptions{MaxSeq: maxSeq})
		post := func(n int, first int64) {
			t.Helper()
			body, ct, ce, err := EncodeLogs(FluentBitLogs(n, first), Encoding{Gzip: true})
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+s.HTTPAddr+"/v1/logs", bytes.NewReader(body))
			req.Header.Set("Content-Type", ct)
			req.Header.Set("Content-Encoding", ce)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("sink answered %d", resp.StatusCode)
			}
		}
		post(10, 0) // 0..9
		post(5, 5)  // 5..9 again
		acked := []int64{0, 5, 9, 10, 11}
		got := s.Loss(acked)
		want := LossReport{Acked: 5, Received: 15, Missing: 2, Duplicated: 2}
		if got != want {
			t.Errorf("MaxSeq %d: Loss = %s, want %s", maxSeq, got, want)
		}
		if n := s.LogRecordCount(); n != 15 {
			t.Errorf("MaxSeq %d: LogRecordCount = %d, want 15", maxSeq, n)
		}
		if maxSeq > 0 && (s.FirstArrival(3) == 0 || s.FirstArrival(42) != 0 || len(s.Logs()) != 0) {
			t.Errorf("MaxSeq %d: FirstArrival(3) = %d, FirstArrival(42) = %d, %d Logs kept", maxSeq, s.FirstArrival(3), s.FirstArrival(42), len(s.Logs()))
		}
	}
}
