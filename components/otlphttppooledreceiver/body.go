package otlphttppooledreceiver // import "github.com/otelcol-relay/otelcol-relay/components/otlphttppooledreceiver"

import (
	"bytes"
	"io"
	"sync/atomic"
)

const (
	// keptBuffers is how many idle buffers wait for the next requests: enough
	// for the gateway's admission limit of 8 requests decoded at once.
	keptBuffers = 8
	// keptBufferBytes is the largest buffer kept: one that read a body above
	// it (max_request_body_size allows more) is left to the GC.
	keptBufferBytes = 16 << 20
)

// bodyPool lends the buffers request bodies are read into. A bounded free
// list rather than a sync.Pool: the pool is emptied by every other garbage
// collection, and at the gateway's saturation (~300 MB/s of pdata garbage)
// that left half the requests growing a fresh buffer from 512 bytes, zeroing
// twice the body on the way. A new buffer starts at the largest body seen
// instead, so even a miss zeroes the body's size once.
type bodyPool struct {
	free    chan *bytes.Buffer
	largest atomic.Int64
}

func newBodyPool() *bodyPool {
	return &bodyPool{free: make(chan *bytes.Buffer, keptBuffers)}
}

func (p *bodyPool) get() *bytes.Buffer {
	select {
	case b := <-p.free:
		b.Reset()
		return b
	default:
		// ReadFrom wants MinRead bytes free before each read, the last one too.
		return bytes.NewBuffer(make([]byte, 0, p.largest.Load()+bytes.MinRead))
	}
}

func (p *bodyPool) put(b *bytes.Buffer) {
	if n := int64(b.Len()); n > p.largest.Load() && n <= keptBufferBytes {
		p.largest.Store(n) // a race may keep the smaller of two: only a hint
	}
	if b.Cap() > keptBufferBytes {
		return
	}
	select {
	case p.free <- b:
	default:
	}
}

// decode reads body whole, closes it and unmarshals it, then takes the buffer
// back. That is safe only because pdata's unmarshalling copies every string
// and bytes field out of its input (TestDecodedDataOwnsItsBytes checks it for
// both encodings); an error is the read's, the close's or unmarshal's, as
// upstream reports them.
func (p *bodyPool) decode(body io.ReadCloser, unmarshal func([]byte) error) error {
	buf := p.get()
	defer p.put(buf)
	if _, err := buf.ReadFrom(body); err != nil {
		return err
	}
	if err := body.Close(); err != nil {
		return err
	}
	return unmarshal(buf.Bytes())
}
