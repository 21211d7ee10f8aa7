// SPDX-License-Identifier: Apache-2.0

package peerhandoffextension // import "github.com/otelcol-relay/otelcol-relay/components/peerhandoffextension"

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"github.com/otelcol-relay/otelcol-relay/components/internal/peerhandoff"
)

var signals = map[string]pipeline.Signal{
	"logs": pipeline.SignalLogs, "metrics": pipeline.SignalMetrics, "traces": pipeline.SignalTraces,
}

// take stores a peer's hand-off in the named exporter's queue and answers 200
// once it is stored. Any other answer leaves the item with the peer, which
// tries the next: 503 when this relay drains too or could not store it, 404
// when it has no such exporter, 400 or 413 when the item is not one.
func (h *handoff) take(w http.ResponseWriter, r *http.Request) {
	signal, ok := signals[r.PathValue("signal")]
	if !ok {
		h.refuse(w, r, "bad_item", http.StatusNotFound, fmt.Errorf("no signal %q: want logs, metrics or traces", r.PathValue("signal")))
		return
	}
	if err := h.checkPeer(r); err != nil {
		h.refuse(w, r, "not_a_peer", http.StatusForbidden, err)
		return
	}
	// A relay that leaves takes nothing: it would only hand it on again.
	if _, draining := h.drainer.DrainingSince(); draining {
		h.refuse(w, r, "draining", http.StatusServiceUnavailable, errors.New("this relay is draining"))
		return
	}
	var id component.ID
	if err := id.UnmarshalText([]byte(r.Header.Get(exporterHeader))); err != nil {
		h.refuse(w, r, "bad_item", http.StatusBadRequest, fmt.Errorf("header %s: %w", exporterHeader, err))
		return
	}
	accept := h.accept(id, signal)
	if accept == nil {
		h.refuse(w, r, "unknown_exporter", http.StatusNotFound, fmt.Errorf("no exporter %s with a %s queue on this relay", id, signal))
		return
	}
	item, err := io.ReadAll(r.Body)
	if err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			h.refuse(w, r, "bad_item", http.StatusRequestEntityTooLarge, fmt.Errorf("larger than server::max_request_body_size: %w", err))
			return
		}
		h.refuse(w, r, "not_stored", http.StatusServiceUnavailable, fmt.Errorf("reading the item: %w", err))
		return
	}
	items, err := accept(r.Context(), item)
	switch {
	case errors.Is(err, peerhandoff.ErrBadItem):
		h.refuse(w, r, "bad_item", http.StatusBadRequest, err)
		return
	case err != nil:
		h.refuse(w, r, "not_stored", http.StatusServiceUnavailable, err)
		return
	}
	h.tel.PeerHandoffTakenItems.Add(r.Context(), int64(items), h.attrs(attribute.String("exporter", id.String())))
	w.WriteHeader(http.StatusOK)
}

// checkPeer accepts a client whose certificate (verified against
// server::tls::client_ca_file by the TLS handshake) names one of peer_names.
func (h *handoff) checkPeer(r *http.Request) error {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return errors.New("no client certificate")
	}
	leaf := r.TLS.PeerCertificates[0]
	for _, name := range h.cfg.PeerNames {
		if leaf.VerifyHostname(name) == nil {
			return nil
		}
	}
	return fmt.Errorf("the client certificate (subject %q, DNS names %v) names none of peer_names %v", leaf.Subject.CommonName, leaf.DNSNames, h.cfg.PeerNames)
}

func (h *handoff) refuse(w http.ResponseWriter, r *http.Request, reason string, code int, err error) {
	h.tel.PeerHandoffRefusedRequests.Add(r.Context(), 1, h.attrs(attribute.String("reason", reason)))
	h.set.Logger.Info("Refused a peer's hand-off; the peer keeps it and tries another",
		zap.String("reason", reason), zap.String("from", r.RemoteAddr), zap.Error(err))
	http.Error(w, err.Error(), code)
}
