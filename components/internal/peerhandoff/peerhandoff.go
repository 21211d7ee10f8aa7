// SPDX-License-Identifier: Apache-2.0

// Package peerhandoff is what a relay's exporters and its peer_handoff extension
// share (docs/decisions/0025-queue-handoff-to-a-peer.md): an exporter registers
// how a queue item a peer hands over enters its own queue, and asks, on each
// push, whether to hand the request to a peer instead of its backend.
package peerhandoff // import "github.com/otelcol-relay/otelcol-relay/components/internal/peerhandoff"

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pipeline"
)

// Accept puts a queue item a peer handed over into the exporter's queue, as the
// exporter's queue encoding reads it, and returns once the queue has stored it,
// with how many items (log records, data points, spans) it holds. An error wrapping ErrBadItem is the item's fault; any other is this relay's
// (a full queue or volume, an exporter shutting down): the peer tries another.
type Accept func(ctx context.Context, item []byte) (items int, err error)

// ErrBadItem is wrapped by Accept's errors about the item itself.
var ErrBadItem = errors.New("not a queue item this exporter reads")

// Handoff is implemented by the peer_handoff extension.
type Handoff interface {
	// Register makes exporter id's signal take peers' items through accept,
	// until the returned function is called (the exporter's Shutdown).
	Register(id component.ID, signal pipeline.Signal, accept Accept) (unregister func())
	// Active reports whether pushes go to peers now: the relay has been
	// draining for longer than its backends are given.
	Active() bool
	// Send gives item, a queue item of exporter id's signal holding items
	// items, to the first peer that stores it, and returns nil only then.
	Send(ctx context.Context, id component.ID, signal pipeline.Signal, item []byte, items int) error
}

// Drainer is implemented by the admission extension: when this relay began
// refusing new export requests, and false while it takes them; and how long a
// drain waits for the queues before it gives up.
type Drainer interface {
	DrainingSince() (time.Time, bool)
	DrainTimeout() time.Duration
}
