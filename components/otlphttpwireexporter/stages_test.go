// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"bytes"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// BenchmarkStages times the exporter's half of a relay's work on the bench's
// own request (1,000 otlpfixture.FluentBitLogs records) beside the same stage
// of bench's floor (bench/floor.go: MarshalProto, then klauspost gzip at the
// default level into a reused writer): intake (the one encoding, into the
// queue item), persist (the item made and read back, as the persistent queue
// does), merge (two requests batched into one, as the queue's batcher does
// with 2,000-item batches) and gzip (of the merged request's chunks).
// otlphttppooledreceiver's BenchmarkStages times the other half.
//
//	go test -run '^$' -bench Stages -benchmem -count 5 ./components/otlphttppooledreceiver ./components/otlphttpwireexporter
func BenchmarkStages(b *testing.B) {
	const records = 1000
	ld := otlpfixture.FluentBitLogs(records, 0)
	ctx := receiverContext()
	raw, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		b.Fatal(err)
	}
	r, err := logsRequest(ctx, ld)
	if err != nil {
		b.Fatal(err)
	}
	enc := queueEncoding{sig: logsSignal}
	zc, err := newGzipCompressor(configcompression.Level(0), 1)
	if err != nil {
		b.Fatal(err)
	}
	var floorOut bytes.Buffer
	floorZW, _ := kgzip.NewWriterLevel(&floorOut, kgzip.DefaultCompression)
	for _, s := range []struct {
		name    string
		records int // in one op
		op      func() error
	}{
		{"floor/marshal", records, func() error { _, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto(); return err }},
		{"relay/intake", records, func() error { _, err := logsRequest(ctx, ld); return err }},
		{"relay/persist", records, func() error {
			item, err := enc.Marshal(ctx, r)
			if err != nil {
				return err
			}
			_, _, err = enc.Unmarshal(item)
			return err
		}},
		{"relay/merge", 2 * records, func() error {
			m := newWireRequest(logsSignal)
			m.appendFrom(r)
			m.appendFrom(r)
			return nil
		}},
		{"floor/gzip", records, func() error {
			floorOut.Reset()
			floorZW.Reset(&floorOut)
			if _, err := floorZW.Write(raw); err != nil {
				return err
			}
			return floorZW.Close()
		}},
		{"relay/gzip", records, func() error { _, err := zc.compress(r.chunks, r.bytes); return err }},
	} {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := s.op(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*s.records), "ns/record")
		})
	}
}
