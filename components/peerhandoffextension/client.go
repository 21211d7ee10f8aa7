// SPDX-License-Identifier: Apache-2.0

package peerhandoffextension // import "github.com/otelcol-relay/otelcol-relay/components/peerhandoffextension"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/otel/attribute"
)

// exporterHeader names the exporter whose queue a hand-off is for.
const exporterHeader = "Otelcol-Relay-Exporter"

// protobufContentType is a hand-off's: a queue item is protobuf.
const protobufContentType = "application/x-protobuf"

// Send tries the peer that last stored a hand-off, then the others from
// ordinal 0 up, and returns nil once one has stored item. Otherwise its
// error says what each peer answered: the caller keeps the item and retries.
func (h *handoff) Send(ctx context.Context, id component.ID, signal pipeline.Signal, item []byte, items int) error {
	if h.client == nil {
		return errors.New("peer_handoff: not started")
	}
	var failed []string
	for _, n := range h.order() {
		pod := h.peers[n]
		err := h.sendTo(ctx, pod, id, signal, item)
		if err == nil {
			h.preferred.Store(int64(n))
			h.tel.PeerHandoffSentItems.Add(ctx, int64(items),
				h.attrs(attribute.String("exporter", id.String()), attribute.String("peer", pod)))
			return nil
		}
		h.tel.PeerHandoffFailedAttempts.Add(ctx, 1, h.attrs(attribute.String("peer", pod)))
		failed = append(failed, pod+": "+err.Error())
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("peer_handoff: no peer stored the %s request of %s (%d items), it stays in this relay's queue: %s",
		signal, id, items, strings.Join(failed, "; "))
}

// order is the peers' indexes to try: the preferred, then the rest in order.
func (h *handoff) order() []int {
	first := int(h.preferred.Load())
	out := make([]int, 0, len(h.peers))
	out = append(out, first)
	for n := range h.peers {
		if n != first {
			out = append(out, n)
		}
	}
	return out
}

func (h *handoff) sendTo(ctx context.Context, pod string, id component.ID, signal pipeline.Signal, item []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.cfg.peerURL(pod, signal.String()), bytes.NewReader(item))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", protobufContentType)
	req.Header.Set(exporterHeader, id.String())
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
}
