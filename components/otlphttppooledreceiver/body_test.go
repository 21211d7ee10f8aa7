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
			p := newBodyPool()
			var remarshal func() ([]byte, error)
			var input []byte
			require.NoError(t, p.decode(io.NopCloser(bytes.NewReader(body)), func(b []byte) error {
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
	p := newBodyPool()
	called := false
	unmarshal := func([]byte) error { called = true; return nil }

	err := p.decode(io.NopCloser(iotest.TimeoutReader(bytes.NewReader(bytes.Repeat([]byte{1}, 4096)))), unmarshal)
	assert.ErrorIs(t, err, iotest.ErrTimeout)
	closeErr := errors.New("connection reset")
	err = p.decode(failingCloser{Reader: bytes.NewReader([]byte{1}), err: closeErr}, unmarshal)
	assert.ErrorIs(t, err, closeErr)
	assert.False(t, called, "nothing is unmarshalled from a body that was not read whole")
}

type failingCloser struct {
	io.Reader
	err error
}

func (f failingCloser) Close() error { return f.err }

// The free list survives garbage collections (a sync.Pool does not), keeps at
// most keptBuffers, none above keptBufferBytes, and a new buffer starts large
// enough for the largest body seen, so reading it neither grows nor copies.
func TestBodyPoolKeepsBuffersBounded(t *testing.T) {
	p := newBodyPool()
	body := bytes.Repeat([]byte("x"), 1<<20)
	read := func() *bytes.Buffer {
		b := p.get()
		_, err := b.ReadFrom(bytes.NewReader(body))
		require.NoError(t, err)
		return b
	}
	first := read()
	p.put(first)
	runtime.GC()
	runtime.GC()
	again := p.get()
	assert.Same(t, first, again, "a buffer handed back is lent again, across garbage collections")
	assert.Zero(t, again.Len())

	fresh := p.get() // the free list is empty: a new buffer, sized for the largest body
	require.GreaterOrEqual(t, fresh.Cap(), len(body)+bytes.MinRead)
	before := fresh.Cap()
	_, err := fresh.ReadFrom(bytes.NewReader(body))
	require.NoError(t, err)
	assert.Equal(t, before, fresh.Cap(), "reading the largest body again needs no growth")

	for range keptBuffers + 4 {
		p.put(new(bytes.Buffer))
	}
	assert.Len(t, p.free, keptBuffers)

	q := newBodyPool()
	q.put(bytes.NewBuffer(make([]byte, 0, keptBufferBytes+1)))
	assert.Empty(t, q.free, "a buffer above keptBufferBytes is left to the GC")
}
