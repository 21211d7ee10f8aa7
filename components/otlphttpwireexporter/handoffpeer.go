// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-relay/otelcol-relay/components/internal/peerhandoff"
)

// A draining relay's exporter gives its requests to a peer instead of its
// backend (docs/decisions/0025-queue-handoff-to-a-peer.md): push returns nil
// once the peer has the request in this exporter's queue there, and the queue
// here then deletes it as delivered. A request travels as the queue item
// queueEncoding writes, so its request context (client metadata, client
// address, span context) and its bytes arrive unchanged.

// handedOverKey holds, in the context given to offer, the request a peer
// handed over; the converter queues it as it is.
type handedOverKey struct{}

// startHandoff registers with the host's peer_handoff extension, if it has
// one.
func (e *wireExporter) startHandoff(host component.Host) error {
	var found []component.ID
	for id, ext := range host.GetExtensions() {
		if h, ok := ext.(peerhandoff.Handoff); ok {
			found = append(found, id)
			e.peers = h
		}
	}
	if len(found) > 1 {
		slices.SortFunc(found, func(a, b component.ID) int { return strings.Compare(a.String(), b.String()) })
		return fmt.Errorf("otlp_http_wire: %d peer_handoff extensions (%v), want at most one: a request would not know which peers to go to", len(found), found)
	}
	if e.peers != nil {
		e.unregister = e.peers.Register(e.id, e.sig.kind, e.accept)
	}
	return nil
}

func (e *wireExporter) shutdown(context.Context) error {
	if e.unregister != nil {
		e.unregister()
	}
	return nil
}

// accept queues a peer's item through this exporter's queue; with a
// persistent queue it returns once the item is stored.
func (e *wireExporter) accept(_ context.Context, item []byte) (int, error) {
	ctx, req, err := queueEncoding{sig: e.sig}.Unmarshal(item)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", peerhandoff.ErrBadItem, err)
	}
	if err := e.offer(context.WithValue(ctx, handedOverKey{}, req)); err != nil {
		return 0, fmt.Errorf("%s: queueing a %s request a peer handed over: %w", e.id, e.sig.name, err)
	}
	return req.ItemsCount(), nil
}

// handOff gives r to a peer. The item is made as the queue would store it, but
// given to no storage (a queueEncoding without the queue storage's handoff).
func (e *wireExporter) handOff(ctx context.Context, r *wireRequest) error {
	item, err := queueEncoding{sig: e.sig}.Marshal(ctx, r)
	if err != nil {
		return err
	}
	return e.peers.Send(ctx, e.id, e.sig.kind, item, r.items)
}
