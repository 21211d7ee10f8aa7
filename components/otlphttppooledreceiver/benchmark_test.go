package otlphttppooledreceiver

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// BenchmarkFluentBitChunk posts the benchmark's 1,000-record fluent-bit chunk
// (gzip, as fluent-bit sends it) to upstream's otlp receiver and to this one,
// over loopback, with a pipeline that only counts: the receivers' own cost,
// plus the same client and HTTP stack in both.
//
//	go test -run '^$' -bench FluentBitChunk -benchtime 200x -count 5 ./components/otlphttppooledreceiver
func BenchmarkFluentBitChunk(b *testing.B) {
	chunk := e2e.EncodeChunks(0, 1, 1000)[0]
	upURL, ourURL, up, ours := startPair(b, 8<<20) // the gateway's max_request_body_size
	up.discard, ours.discard = true, true
	for _, r := range []struct {
		name string
		url  string
		rec  *recorder
	}{{"upstream", upURL, up}, {"pooled", ourURL, ours}} {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, r.url+"/v1/logs", bytes.NewReader(chunk.Body))
				req.Header.Set("Content-Type", "application/x-protobuf")
				req.Header.Set("Content-Encoding", "gzip")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
				r.rec.take(nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunk.N), "ns/record")
		})
	}
}
