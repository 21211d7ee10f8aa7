// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// BenchmarkGatewayExportCompression compresses one exporter batch of the gateway
// (2000 fluent-bit records, sending_queue::batch::max_size) with the writers and
// default levels the otlp_http exporter uses (confighttp: gzip level -1 = 6, zstd
// level -1 = SpeedFastest, encoder concurrency 1). It reports the wire size per
// batch and the ratio; ns/op is the CPU cost per batch on one core.
func BenchmarkGatewayExportCompression(b *testing.B) {
	raw, err := plogotlp.NewExportRequestFromLogs(otlpfixture.FluentBitLogs(2000, 0)).MarshalProto()
	if err != nil {
		b.Fatal(err)
	}
	gz, err := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
	if err != nil {
		b.Fatal(err)
	}
	zw, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(-1)))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		w    interface {
			io.WriteCloser
			Reset(io.Writer)
		}
	}{{"gzip", gz}, {"zstd", zw}} {
		b.Run(c.name, func(b *testing.B) {
			var out bytes.Buffer
			b.SetBytes(int64(len(raw)))
			for i := 0; i < b.N; i++ {
				out.Reset()
				c.w.Reset(&out)
				if _, err := c.w.Write(raw); err != nil {
					b.Fatal(err)
				}
				if err := c.w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(out.Len()), "wire-bytes/batch")
			b.ReportMetric(float64(len(raw))/float64(out.Len()), "ratio")
		})
	}
}
