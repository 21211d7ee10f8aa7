// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"bytes"
	"fmt"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"

	"go.opentelemetry.io/collector/config/configcompression"
)

// gzipCompressor compresses request bodies when `compression` is gzip.
//
// confighttp would do it in its compressRoundTripper with the standard
// library's compress/gzip, into a bytes.Buffer grown from empty: at
// saturation that was the relay's largest single cost (3.9 µs a record,
// compress/flate's deflate). klauspost/compress/gzip writes the same format
// (RFC 1952, any gzip reader reads it) about twice as fast at the same level
// numbers, with a body a few percent larger at the default level
// (BenchmarkGzip, README). An empty request is left to confighttp. The exporter sets Content-Encoding: gzip on the request,
// which makes confighttp's round tripper pass it through uncompressed
// (compressRoundTripper.RoundTrip skips a request that has a Content-Encoding);
// every other compression still goes through confighttp.
//
// The output buffer is not pooled: net/http may return the response before
// its transport has finished reading the request body (and the body is read
// again through GetBody on a redirect or a retried connection), so there is
// no point at which the exporter knows the bytes are no longer read. It is
// allocated once, presized from the ratio of the previous body (the data an
// exporter sends keeps its nature: access logs compress about 5 times, a
// repeated line 100 times), with a margin, so it rarely grows while written
// and does not reserve a quarter of the input for a body of 1%.
//
// Idle writers are kept in a free list, as many as the sending queue has
// consumers (at most that many compress at once). A sync.Pool lost them: it
// is emptied by the garbage collector, which at 10,000 records/s runs a few
// times a second, so most exports built a new writer (about 1 MB at the
// default level) and 8% of the gateway's allocated bytes were writers.
type gzipCompressor struct {
	level   int
	writers chan *gzip.Writer // idle writers at level
	// ratio is the last body's compressed size per 1024 input bytes.
	ratio atomic.Int64
}

// newGzipCompressor returns a compressor at level, confighttp's default
// (zlib's DefaultCompression, -1) when level is unset (0), as confighttp's
// ToClient does, that keeps up to kept idle writers. Config.Validate has
// refused levels gzip does not have.
func newGzipCompressor(level configcompression.Level, kept int) (*gzipCompressor, error) {
	l := int(level)
	if l == 0 {
		l = configcompression.DefaultCompressionLevel
	}
	if _, err := gzip.NewWriterLevel(nil, l); err != nil {
		return nil, fmt.Errorf("compression_params.level: %w", err)
	}
	c := &gzipCompressor{level: l, writers: make(chan *gzip.Writer, max(kept, 1))}
	c.ratio.Store(256)
	return c, nil
}

// compress returns the gzip stream of the chunks, one after the other.
func (c *gzipCompressor) compress(chunks [][]byte, size int) ([]byte, error) {
	est := int64(size) * c.ratio.Load() / 1024
	out := bytes.NewBuffer(make([]byte, 0, est+est/8+512))
	var zw *gzip.Writer
	select {
	case zw = <-c.writers:
		zw.Reset(out)
	default:
		var err error
		if zw, err = gzip.NewWriterLevel(out, c.level); err != nil {
			return nil, err
		}
	}
	for _, chunk := range chunks {
		if _, err := zw.Write(chunk); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	zw.Reset(nil) // let the body go; Reset before use sets the next one
	select {
	case c.writers <- zw:
	default:
	}
	c.ratio.Store(int64(out.Len())*1024/int64(max(size, 1)) + 1)
	return out.Bytes(), nil
}
