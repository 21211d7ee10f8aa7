// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver // import "github.com/otelcol-relay/otelcol-relay/components/otlphttppooledreceiver"

import (
	"bufio"
	"errors"
	"io"
	"slices"

	"github.com/klauspost/compress/gzip"
)

// gunzipPool lends the gzip readers that confighttp decompresses request
// bodies with. Upstream's decoder (confighttp v1.71.0, compression.go) makes a
// compress/gzip reader per request: about 44 KB, most of it the 32 KiB window
// the runtime zeroes, which at fluent-bit's 100-record requests was a tenth of
// the gateway's allocated bytes at 10,000 records/s. klauspost/compress reads
// the same RFC 1952 stream (multistream, CRC and size checked) a third faster
// (BenchmarkGunzip). The free list is bounded like bodyPool's, and for the
// same reason: a sync.Pool is emptied by the garbage collector.
type gunzipPool struct {
	free chan *pooledGunzip
}

func newGunzipPool() *gunzipPool {
	return &gunzipPool{free: make(chan *pooledGunzip, keptBuffers)}
}

// pooledGunzip is one reader, with the bufio.Reader that lets gzip.Reader
// read the body without making a buffer of its own on each Reset.
type pooledGunzip struct {
	br *bufio.Reader
	zr gzip.Reader
}

// errGunzipClosed is what a read after Close gets; the reader may already
// decompress another request's body by then.
var errGunzipClosed = errors.New("gzip: read after the request body was closed")

// gunzipBody is the body the handlers read; Close returns its reader to the
// pool once, however often it is called (the handler and confighttp both do).
type gunzipBody struct {
	pool *gunzipPool
	r    *pooledGunzip
}

// decoder has confighttp's decoder signature: it reads the gzip header of body
// and returns the decompressed stream; a bad header is the error gzip gives,
// which confighttp answers with 400.
func (p *gunzipPool) decoder(body io.ReadCloser) (io.ReadCloser, error) {
	var r *pooledGunzip
	select {
	case r = <-p.free:
		r.br.Reset(body)
	default:
		r = &pooledGunzip{br: bufio.NewReader(body)}
	}
	if err := r.zr.Reset(r.br); err != nil {
		p.put(r)
		return nil, err
	}
	return &gunzipBody{pool: p, r: r}, nil
}

func (p *gunzipPool) put(r *pooledGunzip) {
	r.br.Reset(nil) // let the request's body go
	select {
	case p.free <- r:
	default:
	}
}

func (b *gunzipBody) Read(dst []byte) (int, error) {
	if b.r == nil {
		return 0, errGunzipClosed
	}
	return b.r.zr.Read(dst)
}

// Close does not close the compressed body: net/http owns it, as with
// upstream's decoder.
func (b *gunzipBody) Close() error {
	if b.r == nil {
		return nil
	}
	err := b.r.zr.Close()
	b.pool.put(b.r)
	b.r = nil
	return err
}

// gzipEnabled says whether the server's compression_algorithms accept gzip;
// nil is confighttp's default list, which does.
func gzipEnabled(algorithms []string) bool {
	return algorithms == nil || slices.Contains(algorithms, "gzip")
}
