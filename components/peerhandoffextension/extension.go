// SPDX-License-Identifier: Apache-2.0

// Package peerhandoffextension lets a draining relay give what its backends
// cannot take to a relay that stays, and takes what its peers give it
// (docs/decisions/0025-queue-handoff-to-a-peer.md).
package peerhandoffextension // import "github.com/otelcol-relay/otelcol-relay/components/peerhandoffextension"

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-relay/otelcol-relay/components/internal/peerhandoff"
	"github.com/otelcol-relay/otelcol-relay/components/peerhandoffextension/internal/metadata"
)

type handoff struct {
	cfg      *Config
	set      extension.Settings
	tel      *metadata.TelemetryBuilder
	extAttr  attribute.KeyValue
	peers    []string
	drainer  peerhandoff.Drainer
	client   *http.Client
	server   *http.Server
	serveErr chan error
	// addr is where the server listens (tests listen on port 0).
	addr string

	mu      sync.RWMutex
	accepts map[string]peerhandoff.Accept // by exporter ID and signal (key)

	// preferred is the index in peers of the last peer that stored a
	// hand-off: tried first, so that peers that do not exist (ordinals above
	// the replicas) are not asked for every request.
	preferred atomic.Int64
	started   atomic.Bool // the hand-off has begun (logged once)
}

var (
	_ extension.Extension = (*handoff)(nil)
	_ peerhandoff.Handoff = (*handoff)(nil)
)

func newHandoff(set extension.Settings, cfg *Config) (*handoff, error) {
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	h := &handoff{
		cfg:     cfg,
		set:     set,
		tel:     tel,
		extAttr: attribute.String("extension", set.ID.String()),
		accepts: map[string]peerhandoff.Accept{},
	}
	if cfg.Enabled {
		h.cfg = cfg.withStatefulSet()
		h.peers = h.cfg.peers()
	}
	return h, nil
}

func key(id component.ID, signal pipeline.Signal) string { return id.String() + " " + signal.String() }

// Start finds the admission extension, builds the client (with the host's
// middlewares: certwatch reloads the client certificate) and serves peers.
func (h *handoff) Start(ctx context.Context, host component.Host) error {
	if !h.cfg.Enabled {
		h.set.Logger.Info("Hand-off to peers is off (enabled: false): what a drain cannot deliver stays on this relay's volume")
		return nil
	}
	ext, ok := host.GetExtensions()[h.cfg.Admission]
	if !ok {
		return fmt.Errorf("peer_handoff admission: no extension %q in service::extensions", h.cfg.Admission)
	}
	if h.drainer, ok = ext.(peerhandoff.Drainer); !ok {
		return fmt.Errorf("peer_handoff admission: extension %q is a %s, which does not drain: want an admission extension", h.cfg.Admission, h.cfg.Admission.Type())
	}
	if timeout := h.drainer.DrainTimeout(); h.cfg.StartAfter >= timeout {
		// Not an error: the data stays on the volume, as with the hand-off off.
		h.set.Logger.Warn("start_after is not below the admission extension's drain::timeout: a drain gives up before it hands anything to a peer, and what it cannot deliver stays on this relay's volume",
			zap.Duration("start_after", h.cfg.StartAfter), zap.Duration("drain_timeout", timeout))
	}
	client, err := h.cfg.Client.ToClient(ctx, host.GetExtensions(), h.set.TelemetrySettings)
	if err != nil {
		return fmt.Errorf("peer_handoff client: %w", err)
	}
	h.client = client
	ln, err := h.cfg.Server.ToListener(ctx)
	if err != nil {
		return fmt.Errorf("peer_handoff server::endpoint %q: %w", h.cfg.Server.NetAddr.Endpoint, err)
	}
	h.addr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+handoffPath+"{signal}", h.take)
	h.server, err = h.cfg.Server.ToServer(ctx, host.GetExtensions(), h.set.TelemetrySettings, mux)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("peer_handoff server: %w", err)
	}
	h.serveErr = make(chan error, 1)
	go func() {
		err := h.server.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		h.serveErr <- err
	}()
	h.set.Logger.Info("Taking peers' hand-offs", zap.String("endpoint", h.addr), zap.Strings("peers", h.peers))
	return nil
}

// Shutdown stops serving (after the exporters, which the collector stops
// first) and drops the client's idle connections.
func (h *handoff) Shutdown(ctx context.Context) error {
	var err error
	if h.server != nil {
		err = h.server.Shutdown(ctx)
		err = errors.Join(err, <-h.serveErr)
	}
	if h.client != nil {
		h.client.CloseIdleConnections()
	}
	h.tel.Shutdown()
	return err
}

// Register is called by an exporter's start.
func (h *handoff) Register(id component.ID, signal pipeline.Signal, accept peerhandoff.Accept) func() {
	k := key(id, signal)
	h.mu.Lock()
	h.accepts[k] = accept
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.accepts, k)
		h.mu.Unlock()
	}
}

func (h *handoff) accept(id component.ID, signal pipeline.Signal) peerhandoff.Accept {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.accepts[key(id, signal)]
}

// Active is true from start_after into a drain until the drain ends.
func (h *handoff) Active() bool {
	if h.drainer == nil {
		return false
	}
	since, ok := h.drainer.DrainingSince()
	if !ok || time.Since(since) < h.cfg.StartAfter {
		return false
	}
	if h.started.CompareAndSwap(false, true) {
		h.set.Logger.Warn("The drain gave the backends start_after: handing the queues to peers from now on",
			zap.Duration("start_after", h.cfg.StartAfter), zap.Strings("peers", h.peers))
	}
	return true
}

func (h *handoff) attrs(kvs ...attribute.KeyValue) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(append(kvs, h.extAttr)...))
}
