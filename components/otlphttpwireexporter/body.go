package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"errors"
	"net"
	"sync"
)

var errBodyRevoked = errors.New("otlp_http_wire: request body read after its export returned")

// chunkBodies makes the bodies of one uncompressed request, each reading the
// request's chunks, and revokes them all when the export returns. net/http
// may go on reading a body after Client.Do has returned (a RoundTripper may
// close it "in a separate goroutine even after RoundTrip returns"), and once
// the export returns its request is done: the persistent queue deletes the
// item, and queue_storage reuses the buffer the item was read back into for
// the next one. A read after that gets an error instead of another item's
// bytes (the transport then drops a connection whose request had ended).
type chunkBodies struct {
	chunks [][]byte
	mu     sync.Mutex
	done   bool
}

type chunkBody struct {
	owner *chunkBodies
	bufs  net.Buffers
}

// body returns a new reader of the chunks, for Request.Body and GetBody.
func (c *chunkBodies) body() *chunkBody {
	b := &chunkBody{owner: c, bufs: make(net.Buffers, len(c.chunks))}
	copy(b.bufs, c.chunks) // net.Buffers.Read consumes its slice
	return b
}

// revoke ends every body, made or to be made; a read that is copying
// finishes first.
func (c *chunkBodies) revoke() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
}

func (b *chunkBody) Read(p []byte) (int, error) {
	b.owner.mu.Lock()
	defer b.owner.mu.Unlock()
	if b.owner.done {
		return 0, errBodyRevoked
	}
	return b.bufs.Read(p)
}

func (*chunkBody) Close() error { return nil }
