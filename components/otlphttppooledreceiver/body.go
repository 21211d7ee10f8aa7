// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver // import "github.com/otelcol-relay/otelcol-relay/components/otlphttppooledreceiver"

import (
	"errors"
	"io"
	"math/bits"
	"sync/atomic"
)

const (
	// Buffers come in power-of-two size classes from 1 KiB to 16 MiB.
	minClassShift = 10
	maxClassShift = 24
	numClasses    = maxClassShift - minClassShift + 1
	// keptBufferBytes is the largest buffer kept: one that read a body above
	// it (max_request_body_size allows more) is left to the GC.
	keptBufferBytes = 1 << maxClassShift
	// keptBuffers is how many idle buffers a class keeps: enough for the
	// gateway's admission limit of 8 requests decoded at once.
	keptBuffers = 8
	// keptBytes bounds the idle buffers of all classes together (8 of 4 MiB):
	// memory_limiter counts them as memory in use.
	keptBytes = 32 << 20
	// unsizedStart is where a body of unknown length (a decompressed one)
	// starts when no idle buffer is at hand; it grows from there.
	unsizedStart = 4 << 10
)

// bodyPool lends the buffers request bodies are read into, by size class.
// Bounded free lists rather than a sync.Pool: the pool is emptied by every
// other garbage collection, and at the gateway's saturation (~300 MB/s of pdata
// garbage) that left half the requests growing a fresh buffer, zeroing twice
// the body on the way.
//
// What is allocated follows the body being read, never the bodies before it: a
// body of known length (Content-Length, at most max_request_body_size) gets a
// buffer of its size class; one of unknown length starts at 4 KiB and doubles
// while it is read. Idle buffers are lent first: to a body of unknown length,
// the one nearest the size of the last body read (typical), so a steady stream
// of chunks is read without allocating or copying. That hint only picks among
// idle buffers; a new one is never sized by it.
type bodyPool struct {
	classes [numClasses]chan []byte
	idle    atomic.Int64 // bytes in the free lists
	typical atomic.Int32 // size class of the last body read
	maxBody int64        // a Content-Length above it is not trusted
}

func newBodyPool(maxBody int64) *bodyPool {
	p := &bodyPool{maxBody: maxBody}
	for i := range p.classes {
		p.classes[i] = make(chan []byte, keptBuffers)
	}
	return p
}

// classOf is the smallest class whose buffers hold n bytes; numClasses when
// none does.
func classOf(n int) int {
	if n <= 1<<minClassShift {
		return 0
	}
	return min(bits.Len(uint(n-1))-minClassShift, numClasses)
}

// get returns an empty buffer that holds at least need bytes: an idle one,
// looked for from want's class down to need's and then upwards, or a new one of
// need's class.
func (p *bodyPool) get(need, want int) []byte {
	lo := classOf(need)
	if lo >= numClasses {
		return make([]byte, 0, need) // above every class: not pooled
	}
	hi := max(lo, min(classOf(want), numClasses-1))
	for c := hi; c >= lo; c-- {
		if b, ok := p.take(c); ok {
			return b
		}
	}
	for c := hi + 1; c < numClasses; c++ {
		if b, ok := p.take(c); ok {
			return b
		}
	}
	return make([]byte, 0, 1<<(lo+minClassShift))
}

func (p *bodyPool) take(c int) ([]byte, bool) {
	select {
	case b := <-p.classes[c]:
		p.idle.Add(-int64(cap(b)))
		return b[:0], true
	default:
		return nil, false
	}
}

// put keeps b in the class its capacity fills, unless that class is full, b
// is above keptBufferBytes, or the free lists hold keptBytes already.
func (p *bodyPool) put(b []byte) {
	n := cap(b)
	if n < 1<<minClassShift || n > keptBufferBytes {
		return
	}
	c := bits.Len(uint(n)) - 1 - minClassShift
	if p.idle.Add(int64(n)) > keptBytes {
		p.idle.Add(-int64(n))
		return
	}
	select {
	case p.classes[c] <- b:
	default:
		p.idle.Add(-int64(n))
	}
}

// read reads body to its end into a pooled buffer. size is the body's length
// when known (Content-Length), else -1.
func (p *bodyPool) read(body io.Reader, size int64) ([]byte, error) {
	var buf []byte
	if size >= 0 && size <= p.maxBody {
		buf = p.get(int(size), int(size))
	} else {
		buf = p.get(unsizedStart, 1<<(int(p.typical.Load())+minClassShift))
	}
	for {
		if len(buf) == cap(buf) {
			// Full: the body may end here (a Content-Length that fills its
			// class exactly); look before growing.
			var probe [1]byte
			n, err := body.Read(probe[:])
			if n == 1 {
				buf = append(p.grow(buf), probe[0])
			}
			if err != nil {
				return p.done(buf, err)
			}
			continue
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			return p.done(buf, err)
		}
	}
}

// grow moves buf into a buffer twice its capacity. buf is left to the GC: the
// free lists keep buffers that held whole bodies, which a run of growing reads
// would otherwise crowd out with the steps below them.
func (p *bodyPool) grow(buf []byte) []byte {
	return append(p.get(2*cap(buf), 2*cap(buf)), buf...)
}

func (p *bodyPool) done(buf []byte, err error) ([]byte, error) {
	if !errors.Is(err, io.EOF) {
		return buf, err
	}
	if c := classOf(len(buf)); c < numClasses {
		p.typical.Store(int32(c))
	}
	return buf, nil
}

// decode reads body whole, closes it and unmarshals it, then takes the buffer
// back. That is safe only because pdata's unmarshalling copies every string
// and bytes field out of its input (TestDecodedDataOwnsItsBytes checks it for
// both encodings); an error is the read's, the close's or unmarshal's, as
// upstream reports them.
func (p *bodyPool) decode(body io.ReadCloser, size int64, unmarshal func([]byte) error) error {
	buf, err := p.read(body, size)
	defer p.put(buf)
	if err != nil {
		return err
	}
	if err := body.Close(); err != nil {
		return err
	}
	return unmarshal(buf)
}
