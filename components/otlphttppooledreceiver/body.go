package otlphttppooledreceiver // import "github.com/otelcol-relay/otelcol-relay/components/otlphttppooledreceiver"

import (
	"bytes"
	"io"
	"sync"
)

// bodyPool lends the buffers request bodies are read into. A buffer grows to
// the largest body it has held and keeps that size, so a steady stream of
// chunks is read without allocating or zeroing. Idle buffers go with the next
// garbage collections (sync.Pool), and no buffer outlives the request it read:
// confighttp's max_request_body_size bounds each one.
type bodyPool struct {
	pool sync.Pool
}

func newBodyPool() *bodyPool {
	return &bodyPool{pool: sync.Pool{New: func() any { return new(bytes.Buffer) }}}
}

// decode reads body whole, closes it and unmarshals it, then takes the buffer
// back. That is safe only because pdata's unmarshalling copies every string
// and bytes field out of its input (TestDecodedDataOwnsItsBytes checks it for
// both encodings); an error is the read's, the close's or unmarshal's, as
// upstream reports them.
func (p *bodyPool) decode(body io.ReadCloser, unmarshal func([]byte) error) error {
	buf := p.pool.Get().(*bytes.Buffer)
	defer p.pool.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(body); err != nil {
		return err
	}
	if err := body.Close(); err != nil {
		return err
	}
	return unmarshal(buf.Bytes())
}
