// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// NewSink starts an OTLP sink (otlpfixture.NewSink) closed when the test ends.
// It also decodes zstd, which exporters may be configured to send.
func NewSink(t tb.T, opts otlpfixture.SinkOptions) *otlpfixture.Sink {
	t.Helper()
	if opts.Decoders == nil {
		opts.Decoders = map[string]func(io.Reader) (io.ReadCloser, error){"zstd": newZstdReader}
	}
	return otlpfixture.NewSink(t, opts)
}

func newZstdReader(r io.Reader) (io.ReadCloser, error) {
	zr, err := zstd.NewReader(r)
	if err != nil {
		return nil, err
	}
	return zr.IOReadCloser(), nil
}
