// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"context"
	"net"
	"slices"

	"go.opentelemetry.io/otel/trace"

	"go.opentelemetry.io/collector/client"
)

// requestContext is what upstream's queue encoding keeps of a request's
// context, as it was when an item was encoded: Marshal hands that item over
// only if the context it is given encodes the same.
type requestContext struct {
	info client.Info
	span trace.SpanContext
}

func requestContextOf(ctx context.Context) requestContext {
	return requestContext{info: client.FromContext(ctx), span: trace.SpanContextFromContext(ctx)}
}

// encodesAs reports whether ctx encodes to the same request context as c.
//
// Follows pdata/xpdata@v0.165.0 request/context.go encodeContext: the span
// context only when valid, every client metadata key with its values, the
// client address only for *net.IPAddr, *net.TCPAddr, *net.UDPAddr and
// *net.UnixAddr. Re-read it when the pin moves: a field upstream starts to
// keep must be compared here too.
func (c requestContext) encodesAs(ctx context.Context) bool {
	span := trace.SpanContextFromContext(ctx)
	if span.IsValid() != c.span.IsValid() || (span.IsValid() && !span.Equal(c.span)) {
		return false
	}
	info := client.FromContext(ctx)
	return sameAddr(info.Addr, c.info.Addr) && sameMetadata(info.Metadata, c.info.Metadata)
}

func sameAddr(a, b net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		b, ok := b.(*net.TCPAddr)
		return ok && (a == b || a.IP.Equal(b.IP) && a.Port == b.Port && a.Zone == b.Zone)
	case *net.UDPAddr:
		b, ok := b.(*net.UDPAddr)
		return ok && (a == b || a.IP.Equal(b.IP) && a.Port == b.Port && a.Zone == b.Zone)
	case *net.IPAddr:
		b, ok := b.(*net.IPAddr)
		return ok && (a == b || a.IP.Equal(b.IP) && a.Zone == b.Zone)
	case *net.UnixAddr:
		b, ok := b.(*net.UnixAddr)
		return ok && (a == b || *a == *b)
	}
	// not kept by upstream: the same if b is not kept either
	switch b.(type) {
	case *net.TCPAddr, *net.UDPAddr, *net.IPAddr, *net.UnixAddr:
		return false
	}
	return true
}

// sameMetadata compares keys (a key with no values is kept too) and values.
func sameMetadata(a, b client.Metadata) bool {
	n := 0
	for k := range a.Keys() {
		if !slices.Contains(slices.Collect(b.Keys()), k) || !slices.Equal(a.Get(k), b.Get(k)) {
			return false
		}
		n++
	}
	for range b.Keys() {
		n--
	}
	return n == 0
}
