// SPDX-License-Identifier: Apache-2.0

package admissionextension

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap"
)

// The drain endpoint is how a pod leaves a Service without stranding what it
// acknowledged. Upstream stops receivers before exporters, and the persistent
// queue stops its consumers at shutdown without emptying, so a plain SIGTERM
// leaves the queue on the pod's volume. The pod's preStop hook calls GET /drain
// instead: the relay refuses new requests (senders retry on another replica),
// /ready turns 503 (the endpoint leaves the Service), and /drain returns once the
// requests in progress are answered and the exporters' queues are empty, or
// after drain::timeout. Then the kubelet sends SIGTERM and the collector stops
// with nothing left to persist. Who may call it, and how a drain nobody meant
// ends, is drainguard.go.

func (a *admission) startDrainServer() error {
	if a.cfg.Drain.Endpoint == "" {
		return nil
	}
	ln, err := net.Listen("tcp", a.cfg.Drain.Endpoint)
	if err != nil {
		return fmt.Errorf("admission drain::endpoint %q: %w", a.cfg.Drain.Endpoint, err)
	}
	a.drainAddr = ln.Addr()
	a.guard.allowed = a.resolveSources()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /drain", a.handleDrain)
	mux.HandleFunc("GET /ready", a.handleReady)
	a.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	a.serverDone = make(chan struct{})
	go func() {
		defer close(a.serverDone)
		if err := a.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.logger.Error("Drain endpoint stopped", zap.Error(err))
		}
	}()
	return nil
}

func (a *admission) stopDrainServer(ctx context.Context) error {
	if a.server == nil {
		return nil
	}
	err := a.server.Shutdown(ctx)
	<-a.serverDone
	return err
}

func (a *admission) handleReady(w http.ResponseWriter, _ *http.Request) {
	switch {
	case a.draining.Load():
		http.Error(w, "draining", http.StatusServiceUnavailable)
	case !a.ready.Load():
		http.Error(w, "pipelines not started", http.StatusServiceUnavailable)
	default:
		_, _ = io.WriteString(w, "ready\n")
	}
}

// handleDrain answers 200 once drained, and 500 with what is left otherwise (for
// a person calling it; the kubelet ignores a hook's status, so drain logs it
// too), and 403 to a source not in drain::allowed_sources.
func (a *admission) handleDrain(w http.ResponseWriter, r *http.Request) {
	if !a.drainAllowed(r.RemoteAddr) {
		http.Error(w, a.refuseDrain(r.Context(), r.RemoteAddr), http.StatusForbidden)
		return
	}
	res := a.drain(r.Context())
	if res.drained {
		_, _ = io.WriteString(w, res.String()+"\n")
		return
	}
	http.Error(w, res.String(), http.StatusInternalServerError)
}

type drainResult struct {
	drained  bool
	took     time.Duration
	active   int64
	queued   int64            // -1: unknown
	perQueue map[string]int64 // exporter/data_type -> size
	err      error            // why the queue size is unknown
}

func (d drainResult) String() string {
	if d.drained {
		return fmt.Sprintf("drained in %s: no request in progress, exporters' queues empty", d.took.Round(time.Millisecond))
	}
	if d.queued < 0 {
		return fmt.Sprintf("drain gave up after %s: %d requests in progress, queue size unknown (%v)", d.took.Round(time.Millisecond), d.active, d.err)
	}
	return fmt.Sprintf("drain gave up after %s: %d requests in progress, %d left in the exporters' queues (%s); they stay on this pod's queue volume and are sent when a relay starts again on it",
		d.took.Round(time.Millisecond), d.active, d.queued, formatQueues(d.perQueue))
}

func formatQueues(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// drain refuses new requests and waits until the requests in progress are
// answered and the exporters' queues are empty, or drain::timeout passes, or ctx
// (the hook's connection, or Shutdown) ends.
func (a *admission) drain(ctx context.Context) drainResult {
	start := time.Now()
	a.startDraining("GET /drain (preStop)", false)
	a.armResume()
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Drain.Timeout)
	defer cancel()
	stop := context.AfterFunc(a.drainCtx, cancel)
	defer stop()

	tick := time.NewTicker(a.cfg.Drain.PollInterval)
	defer tick.Stop()
	res := drainResult{queued: -1}
	for {
		res.active = a.active.Load()
		if a.cfg.Drain.MetricsURL == "" {
			res.queued, res.perQueue, res.err = 0, nil, nil
		} else if q, per, err := a.queueSize(ctx); err == nil {
			res.queued, res.perQueue, res.err = q, per, nil
		} else if ctx.Err() == nil {
			res.queued, res.perQueue, res.err = -1, nil, err
		} else if res.queued < 0 && res.err == nil {
			// A read cut short by the drain's own end keeps the last
			// reading or error; only with neither is the cut the reason.
			res.err = err
		}
		if res.queued >= 0 {
			a.tel.AdmissionDrainQueueSize.Record(context.Background(), res.queued, a.attrs)
		}
		// Requests in progress are still being written into the queues, so
		// an empty queue counts only once they are answered.
		res.took = time.Since(start)
		if res.active == 0 && res.queued == 0 {
			res.drained = true
			a.logger.Info("Drained: no request in progress, exporters' queues empty", zap.Duration("took", res.took))
			return res
		}
		select {
		case <-ctx.Done():
			res.took = time.Since(start)
			a.logger.Warn("Drain gave up; what is left stays in the persistent queues on this pod's volume",
				zap.Duration("took", res.took),
				zap.Int64("requests_in_progress", res.active),
				zap.Int64("queue_size_left", res.queued),
				zap.String("queues", formatQueues(res.perQueue)),
				zap.NamedError("queue_size_error", res.err))
			return res
		case <-tick.C:
		}
	}
}

// queueSizeMetric is what a relay holds and has not delivered: the exporters'
// sending queues.
const queueSizeMetric = "otelcol_exporter_queue_size"

// queueSize reads otelcol_exporter_queue_size from the collector's own
// Prometheus endpoint and sums it over exporters and signals. The persistent
// queue lowers it only when a request is done (delivered, or dropped as
// permanently failed), not when a consumer takes it, so 0 means nothing is left
// to deliver, including what the batcher and retries hold.
func (a *admission) queueSize(ctx context.Context) (int64, map[string]int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cfg.Drain.MetricsURL, http.NoBody)
	if err != nil {
		return -1, nil, err
	}
	resp, err := a.metricsHTTP.Do(req)
	if err != nil {
		return -1, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return -1, nil, fmt.Errorf("%s answered %s", a.cfg.Drain.MetricsURL, resp.Status)
	}
	return parseQueueSize(resp.Body)
}

// parseQueueSize sums every queueSizeMetric sample in a Prometheus text
// exposition, by exporter and signal. No sample at all is an error: the
// telemetry level hides it, or the URL is not this collector's, and "empty"
// would be a guess.
func parseQueueSize(r io.Reader) (int64, map[string]int64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return -1, nil, fmt.Errorf("reading the collector's metrics: %w", err)
	}
	per := map[string]int64{}
	var total int64
	found := false
	for _, s := range fams[queueSizeMetric].GetMetric() {
		var v float64
		switch {
		case s.Gauge != nil:
			v = s.Gauge.GetValue()
		case s.Untyped != nil:
			v = s.Untyped.GetValue()
		default:
			continue
		}
		labels := map[string]string{}
		for _, l := range s.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		found = true
		total += int64(v)
		per[labels["exporter"]+"/"+labels["data_type"]] += int64(v)
	}
	if !found {
		return -1, nil, fmt.Errorf("no %s sample (telemetry metrics level below normal?)", queueSizeMetric)
	}
	return total, per, nil
}
