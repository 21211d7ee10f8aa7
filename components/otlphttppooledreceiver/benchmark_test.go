// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
)

// fluentBitChunk is n log records of about 1 KB each (a fluent-bit record
// after the kubernetes filter), gzip-compressed as fluent-bit sends them.
func fluentBitChunk(b *testing.B, n int) []byte {
	ld := sampleLogs(n)
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	pad := strings.Repeat("x", 600)
	for i := range lrs.Len() {
		line, _ := lrs.At(i).Body().Map().Get("log")
		line.SetStr(line.Str() + " " + pad)
	}
	raw, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkFluentBitChunk posts a 1,000-record fluent-bit chunk
// (gzip, as fluent-bit sends it) to upstream's otlp receiver and to this one,
// over loopback, with a pipeline that only counts: the receivers' own cost,
// plus the same client and HTTP stack in both.
//
//	go test -run '^$' -bench FluentBitChunk -benchtime 200x -count 5 ./components/otlphttppooledreceiver
func BenchmarkFluentBitChunk(b *testing.B) {
	const records = 1000
	chunk := fluentBitChunk(b, records)
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
				req, _ := http.NewRequest(http.MethodPost, r.url+"/v1/logs", bytes.NewReader(chunk))
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
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*records), "ns/record")
		})
	}
}

// BenchmarkGunzip decompresses fluent-bit chunks of 100 records (the bench's
// 10,000 records/s) and 1,000 (its saturation) the way upstream's confighttp
// does, a compress/gzip reader per request, and with gunzipPool.
//
//	go test -run '^$' -bench Gunzip -count 5 ./components/otlphttppooledreceiver
func BenchmarkGunzip(b *testing.B) {
	for _, n := range []int{100, 1000} {
		chunk := fluentBitChunk(b, n)
		out := bytes.NewBuffer(make([]byte, 0, 4<<20))
		pool := newGunzipPool()
		for _, d := range []struct {
			name string
			open func(io.ReadCloser) (io.ReadCloser, error)
		}{
			{"upstream", func(r io.ReadCloser) (io.ReadCloser, error) { return gzip.NewReader(r) }},
			{"pooled", pool.decoder},
		} {
			b.Run(fmt.Sprintf("%s/%d-records", d.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					body, err := d.open(io.NopCloser(bytes.NewReader(chunk)))
					if err != nil {
						b.Fatal(err)
					}
					out.Reset()
					if _, err := out.ReadFrom(body); err != nil {
						b.Fatal(err)
					}
					_ = body.Close()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
			})
		}
	}
}
