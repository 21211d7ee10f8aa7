package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"math/bits"
	"sync"
)

// pooledFrom is the size from which a value read back from a segment goes
// into a pooled buffer: Go allocates objects of 32 KiB and more as spans of
// their own, zeroed before use, and those are the queue items.
const pooledFrom = 32 << 10

// readPool keeps the buffers values were read back into once their keys are
// deleted, for the next values read back. At saturation most queue items
// outgrow the memory cache and are read back: a fresh allocation of about
// 1 MB each was 17% of the bytes the durable gateway allocated, and the
// runtime zeroed every one of them before pread overwrote it
// (bench/results/session7.md). One pool serves all clients of an extension.
//
// Buffers are kept by size class, so that a buffer is reused only for a
// value of nearly its size: a class is n rounded up to an eighth of its
// power of two (at most 12.5% more than asked for), at least 32 KiB.
type readPool struct {
	mu   sync.Mutex
	free map[int][][]byte // by capacity, most recently returned last
	idle int              // bytes in free
	max  int              // bound on idle
}

func newReadPool(maxIdle int) *readPool {
	if maxIdle <= 0 {
		return nil
	}
	return &readPool{free: map[int][][]byte{}, max: maxIdle}
}

// sizeClass is the capacity a buffer for n bytes is allocated with.
func sizeClass(n int) int {
	if n <= pooledFrom {
		return pooledFrom
	}
	step := 1 << (bits.Len(uint(n-1)) - 4)
	return (n + step - 1) / step * step
}

// get returns a buffer of length n, reused when one of its class is idle.
// Its bytes are whatever the last value left: the caller overwrites them.
func (p *readPool) get(n int) []byte {
	if p == nil {
		return make([]byte, n)
	}
	c := sizeClass(n)
	p.mu.Lock()
	if l := p.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[c] = l[:len(l)-1]
		p.idle -= c
		p.mu.Unlock()
		return b[:n]
	}
	p.mu.Unlock()
	return make([]byte, n, c)
}

// put takes back a buffer that get returned and nothing uses any more. Past
// the bound, the buffers idle longest in the largest classes are dropped
// for the garbage collector.
func (p *readPool) put(b []byte) {
	c := cap(b)
	if p == nil || c > p.max || c != sizeClass(c) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.idle+c > p.max {
		p.dropOne()
	}
	p.free[c] = append(p.free[c], b[:0])
	p.idle += c
}

func (p *readPool) dropOne() {
	largest := 0
	for c, l := range p.free {
		if len(l) > 0 && c > largest {
			largest = c
		}
	}
	l := p.free[largest]
	copy(l, l[1:])
	l[len(l)-1] = nil
	p.free[largest] = l[:len(l)-1]
	p.idle -= largest
}

// idleBytes is what the pool holds, for tests.
func (p *readPool) idleBytes() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle
}
