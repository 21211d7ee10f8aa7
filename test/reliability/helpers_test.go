package reliability_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// rig is one gateway as the StatefulSet runs it (config/gateway.yaml with mTLS on
// the receiver, config/receiver-tls.yaml) in front of a TLS backend sink.
type rig struct {
	sink *e2e.Sink
	gw   *e2e.Gateway
	rcv  *e2e.ReceiverTLS
}

func newRig(t *testing.T, queueDir string, env ...string) *rig {
	t.Helper()
	backend := e2e.NewBackendTLS(t, "default")
	sink := e2e.NewSink(t, e2e.SinkOptions{TLS: backend.Server})
	rcv := e2e.NewReceiverTLS(t)
	gw := e2e.NewGateway(t, e2e.GatewayOptions{
		BackendURL: "https://" + sink.HTTPAddr,
		Backend:    backend,
		Receiver:   rcv,
		QueueDir:   queueDir,
		Env:        env,
	})
	return &rig{sink: sink, gw: gw, rcv: rcv}
}

// start runs the gateway binary directly (same ports and queue directory every time).
func (r *rig) start(t *testing.T) *e2e.Collector {
	t.Helper()
	return e2e.Start(t, "", e2e.Options{Env: r.gw.Env, Args: r.gw.Args, ReadyTimeout: 90 * time.Second})
}

func (r *rig) sender(workers int, rate float64) *e2e.Sender {
	return e2e.NewSender(e2e.SenderOptions{
		URL: r.gw.HTTPURL + "/v1/logs", TLS: r.rcv.Client, Workers: workers, Rate: rate,
	})
}

// settle stops feeding, lets the sender finish retrying what it holds, and fails
// the test if a chunk was dropped (a non-retryable status) or never acknowledged.
func settle(t *testing.T, cancel context.CancelFunc, s *e2e.Sender, timeout time.Duration) e2e.SenderStats {
	t.Helper()
	cancel()
	if !s.Wait(timeout) {
		t.Errorf("sender still retrying after %s", timeout)
	}
	st := s.Stats()
	t.Logf("sender: acked %d records, dropped %d, retries %d, statuses per attempt %v", st.AckedRecords, st.DroppedRecords, st.Retries, st.Statuses)
	for code, n := range st.Statuses {
		if code != http.StatusOK && !e2e.Retryable(code) {
			t.Errorf("receiver answered %d (%s) %d times: fluent-bit drops such a chunk", code, http.StatusText(code), n)
		}
	}
	if st.DroppedRecords > 0 {
		t.Errorf("%d records were dropped by the sender (not acknowledged)", st.DroppedRecords)
	}
	return st
}

// expectDelivered waits until every acknowledged record reached the sink, then
// fails on any missing one and reports duplicates (at-least-once allows them).
func expectDelivered(t *testing.T, sink *e2e.Sink, acked []int64, timeout time.Duration) e2e.LossReport {
	t.Helper()
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged: the scenario did not run")
	}
	// Give up early once nothing has arrived for a while: what is missing then
	// is lost, not late.
	deadline := time.Now().Add(timeout)
	var rep e2e.LossReport
	last, lastChange := -1, time.Now()
	for {
		rep = sink.Loss(acked)
		if rep.Received != last {
			last, lastChange = rep.Received, time.Now()
		}
		if rep.Missing == 0 || time.Now().After(deadline) || time.Since(lastChange) > 45*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("delivery: %s", rep)
	if rep.Missing > 0 {
		t.Errorf("%d of %d acknowledged records never arrived at the backend", rep.Missing, rep.Acked)
	}
	return rep
}
