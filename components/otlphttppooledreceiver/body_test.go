// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// scribble overwrites all of b's backing array, as the next request read into
// a pooled buffer would.
func scribble(b []byte) {
	b = b[:cap(b)]
	for i := range b {
		b[i] = 0xA5
	}
}

// The pool hands a buffer to the next request while the previous request's
// data may still sit in a queue: safe only if decoding copies every string and
// bytes field out of the input. pdata v1.71 does, in both encodings; this fails
// the day an upgrade starts aliasing the input.
func TestDecodedDataOwnsItsBytes(t *testing.T) {
	type codec struct {
		name      string
		marshal   func() ([]byte, error)
		unmarshal func([]byte) (remarshal func() ([]byte, error), err error)
	}
	var codecs []codec
	for _, json := range []bool{false, true} {
		enc := "protobuf"
		if json {
			enc = "json"
		}
		logs := plogotlp.NewExportRequestFromLogs(sampleLogs(50))
		metrics := pmetricotlp.NewExportRequestFromMetrics(sampleMetrics())
		traces := ptraceotlp.NewExportRequestFromTraces(sampleTraces())
		codecs = append(codecs,
			codec{"logs " + enc, pick(json, logs.MarshalProto, logs.MarshalJSON), func(b []byte) (func() ([]byte, error), error) {
				r := plogotlp.NewExportRequest()
				return r.MarshalProto, pick(json, r.UnmarshalProto, r.UnmarshalJSON)(b)
			}},
			codec{"metrics " + enc, pick(json, metrics.MarshalProto, metrics.MarshalJSON), func(b []byte) (func() ([]byte, error), error) {
				r := pmetricotlp.NewExportRequest()
				return r.MarshalProto, pick(json, r.UnmarshalProto, r.UnmarshalJSON)(b)
			}},
			codec{"traces " + enc, pick(json, traces.MarshalProto, traces.MarshalJSON), func(b []byte) (func() ([]byte, error), error) {
				r := ptraceotlp.NewExportRequest()
				return r.MarshalProto, pick(json, r.UnmarshalProto, r.UnmarshalJSON)(b)
			}},
		)
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			body, err := c.marshal()
			require.NoError(t, err)
			p := newBodyPool(20 << 20)
			var remarshal func() ([]byte, error)
			var input []byte
			require.NoError(t, p.decode(io.NopCloser(bytes.NewReader(body)), -1, func(b []byte) error {
				input = b
				remarshal, err = c.unmarshal(b)
				return err
			}))
			before, err := remarshal()
			require.NoError(t, err)
			scribble(input)
			after, err := remarshal()
			require.NoError(t, err)
			assert.Equal(t, before, after, "the decoded data changed when the buffer it was read from was reused")
		})
	}
}

func pick[F any](second bool, a, b F) F {
	if second {
		return b
	}
	return a
}

// A body cut short or failing to close is the client's error (400 upstream),
// and the buffer goes back to the pool either way.
func TestDecodeReportsReadAndCloseErrors(t *testing.T) {
	p := newBodyPool(20 << 20)
	called := false
	unmarshal := func([]byte) error { called = true; return nil }

	err := p.decode(io.NopCloser(iotest.TimeoutReader(bytes.NewReader(bytes.Repeat([]byte{1}, 4096)))), -1, unmarshal)
	require.ErrorIs(t, err, iotest.ErrTimeout)
	closeErr := errors.New("connection reset")
	err = p.decode(failingCloser{Reader: bytes.NewReader([]byte{1}), err: closeErr}, 1, unmarshal)
	require.ErrorIs(t, err, closeErr)
	assert.False(t, called, "nothing is unmarshalled from a body that was not read whole")
}

type failingCloser struct {
	io.Reader
	err error
}

func (f failingCloser) Close() error { return f.err }

// The free lists survive garbage collections (a sync.Pool does not): a buffer
// handed back is lent again, to a body of its size class, or to one of unknown
// length when the last body read was of that class; so a steady stream of
// chunks is read without allocating.
func TestBodyPoolLendsBuffersAgain(t *testing.T) {
	p := newBodyPool(20 << 20)
	body := bytes.Repeat([]byte("x"), 1<<20+1)
	read := func(size int64) []byte {
		b, err := p.read(bytes.NewReader(body), size)
		require.NoError(t, err)
		require.Equal(t, body, b)
		return b
	}
	first := read(-1) // grown from 4 KiB, to the 2 MiB class
	p.put(first)
	runtime.GC()
	runtime.GC()
	for _, size := range []int64{-1, int64(len(body))} {
		again := read(size)
		assert.Same(t, &first[0], &again[0], "a buffer handed back is lent again, across garbage collections")
		p.put(again)
	}

	r := bytes.NewReader(body)
	allocs := testing.AllocsPerRun(20, func() {
		r.Reset(body)
		b, _ := p.read(r, -1)
		p.put(b)
	})
	assert.Zero(t, allocs, "reading a body the size of the last one from the pool allocates")
}

// A Content-Length is trusted up to max_request_body_size: the buffer is the
// body's size class, and a body that fills it exactly is read without growing.
// A larger claim (the read will fail at the limit) starts small.
func TestBodyPoolSizesByContentLength(t *testing.T) {
	p := newBodyPool(64 << 10)
	for _, n := range []int{0, 1, 1000, 1 << 10, 5000, 64 << 10} {
		b, err := p.read(bytes.NewReader(make([]byte, n)), int64(n))
		require.NoError(t, err)
		assert.Len(t, b, n)
		assert.Equalf(t, 1<<(classOf(n)+minClassShift), cap(b), "buffer for a body of %d bytes", n)
	}
	b, err := p.read(bytes.NewReader(make([]byte, 10)), 1<<30)
	require.NoError(t, err)
	assert.Equal(t, unsizedStart, cap(b), "a Content-Length above max_request_body_size is not allocated")
}

// The free lists are bounded: keptBuffers a class, nothing above
// keptBufferBytes, and keptBytes in all.
func TestBodyPoolKeepsBuffersBounded(t *testing.T) {
	p := newBodyPool(20 << 20)
	for range keptBuffers + 4 {
		p.put(make([]byte, 0, 4<<10))
	}
	assert.Len(t, p.classes[classOf(4<<10)], keptBuffers)

	p.put(make([]byte, 0, keptBufferBytes+1))
	assert.Empty(t, p.classes[numClasses-1], "a buffer above keptBufferBytes is left to the GC")

	q := newBodyPool(20 << 20)
	for range keptBuffers {
		q.put(make([]byte, 0, keptBufferBytes))
	}
	assert.LessOrEqual(t, q.idle.Load(), int64(keptBytes))
	assert.Len(t, q.classes[numClasses-1], keptBytes/keptBufferBytes)
}
