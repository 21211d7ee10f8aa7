// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// BenchmarkStages times the receiver's half of a relay's work on the bench's
// own request (1,000 otlpfixture.FluentBitLogs records, gzip, as bench/ sends
// them) beside the same stage of bench's floor (bench/floor.go: a
// compress/gzip reader per request, io.ReadAll, UnmarshalProto). Run with
// otlphttpwireexporter's BenchmarkStages, which times the other half.
//
//	go test -run '^$' -bench Stages -benchmem -count 5 ./components/otlphttppooledreceiver ./components/otlphttpwireexporter
func BenchmarkStages(b *testing.B) {
	const records = 1000
	body, _, _, err := otlpfixture.EncodeLogs(otlpfixture.FluentBitLogs(records, 0), otlpfixture.Encoding{Gzip: true})
	if err != nil {
		b.Fatal(err)
	}
	raw := gunzipAll(b, body)
	bodies, gunzip := newBodyPool(8<<20), newGunzipPool()
	for _, s := range []struct {
		name string
		op   func() error
	}{
		{"floor/gunzip", func() error { _, err := floorGunzip(body); return err }},
		{"relay/gunzip", func() error {
			zr, err := gunzip.decoder(io.NopCloser(bytes.NewReader(body)))
			if err != nil {
				return err
			}
			buf, err := bodies.read(zr, -1)
			bodies.put(buf)
			_ = zr.Close()
			return err
		}},
		{"floor/unmarshal", func() error { return plogotlp.NewExportRequest().UnmarshalProto(raw) }},
		{"floor/gunzip+unmarshal", func() error {
			raw, err := floorGunzip(body)
			if err != nil {
				return err
			}
			return plogotlp.NewExportRequest().UnmarshalProto(raw)
		}},
		// What the handler does before the pipeline: the body gunzipped by a
		// pooled reader into a pooled buffer, then unmarshalled.
		{"relay/decode", func() error {
			zr, err := gunzip.decoder(io.NopCloser(bytes.NewReader(body)))
			if err != nil {
				return err
			}
			return bodies.decode(zr, -1, plogotlp.NewExportRequest().UnmarshalProto)
		}},
	} {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := s.op(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*records), "ns/record")
		})
	}
}

// floorGunzip is bench/floor.go's gunzip.
func floorGunzip(body []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func gunzipAll(b *testing.B, body []byte) []byte {
	b.Helper()
	raw, err := floorGunzip(body)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}
