// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"log"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	kgzip "github.com/klauspost/compress/gzip"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// gzipWriter is what the floor needs of a gzip implementation.
type gzipWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// runFloor measures in process what no relay can avoid: gunzip, unmarshal,
// marshal and gzip at the default level of the same payload. "floor" gzips with
// the standard library, the floor of measuring.md; "floor-klauspost" with
// klauspost/compress, which otlp_http_wire uses.
func runFloor(variant string, chunks []e2e.Chunk) *runResult {
	workers := 1
	base, _ := splitVariant(variant)
	if base == "floor-parallel" {
		workers = runtime.GOMAXPROCS(0)
	}
	before := rusage()
	start := time.Now()
	var n atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var out bytes.Buffer
			var zw gzipWriter
			if base == "floor-klauspost" {
				zw, _ = kgzip.NewWriterLevel(&out, kgzip.DefaultCompression)
			} else {
				zw, _ = gzip.NewWriterLevel(&out, gzip.DefaultCompression)
			}
			// Three passes: one pass over 100,000 records lasts about a
			// second, short enough for a neighbour's burst to move the median.
			for pass := 0; pass < 3; pass++ {
				for i := w; i < len(chunks); i += workers {
					floorOne(chunks[i], zw, &out)
					n.Add(int64(chunks[i].N))
				}
			}
		})
	}
	wg.Wait()
	cpu := (rusage() - before).Seconds()
	wall := time.Since(start).Seconds()
	total := float64(n.Load())
	return &runResult{SatRate: total / wall, SatPerCore: total / cpu, SatCPUsPerM: cpu / total * 1e6}
}

// floorOne is the floor's work for one request: gunzip, unmarshal, marshal, gzip.
func floorOne(c e2e.Chunk, zw gzipWriter, out *bytes.Buffer) {
	zr, err := gzip.NewReader(bytes.NewReader(c.Body))
	if err != nil {
		log.Fatal(err)
	}
	raw, _ := io.ReadAll(zr)
	req := plogotlp.NewExportRequest()
	if err := req.UnmarshalProto(raw); err != nil {
		log.Fatal(err)
	}
	enc, _ := req.MarshalProto()
	out.Reset()
	zw.Reset(out)
	_, _ = zw.Write(enc)
	_ = zw.Close()
}

func rusage() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
