// SPDX-License-Identifier: Apache-2.0

// Package scenario holds the reliability scenarios, written once and run at two
// scales: test/reliability runs them small, as correctness checks, and `make
// bench` runs them at full scale and reports their figures. Each scenario
// asserts through the caller's T (a test, or the bench's runner) and fills a
// Result as it goes, so a bench run keeps its figures even when it fails.
package scenario

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// Rig is one gateway as the StatefulSet runs it (config/gateway.yaml with mTLS
// on the receiver, config/receiver-tls.yaml) in front of a TLS backend sink.
type Rig struct {
	Sink   *otlpfixture.Sink
	GW     *e2e.Gateway
	Rcv    *e2e.ReceiverTLS
	args   []string
	binary string
}

// RigOptions changes how the rig's gateway runs.
type RigOptions struct {
	QueueDir string   // the queue directory, or a fresh one
	Env      []string // added to the gateway's environment (later entries win)
	// Args replaces the gateway's --config arguments, for the benchmark's
	// variants; the environment stays the gateway's.
	Args []string
	// MaxSeq makes the sink keep only per-sequence counts below it
	// (otlpfixture.SinkOptions.MaxSeq): millions of records at full scale.
	MaxSeq int64
	// Binary runs another build of the collector (e2e.Options.Binary).
	Binary string
}

// NewRig issues the backend's and the receiver's TLS material, starts the sink
// and prepares (does not start) the gateway.
func NewRig(t tb.T, o RigOptions) *Rig {
	t.Helper()
	backend := e2e.NewBackendTLS(t, "default")
	sink := e2e.NewSink(t, otlpfixture.SinkOptions{TLS: backend.Server, MaxSeq: o.MaxSeq})
	rcv := e2e.NewReceiverTLS(t)
	gw := e2e.NewGateway(t, e2e.GatewayOptions{
		BackendURL: "https://" + sink.HTTPAddr,
		Backend:    backend,
		Receiver:   rcv,
		QueueDir:   o.QueueDir,
		Env:        o.Env,
	})
	r := &Rig{Sink: sink, GW: gw, Rcv: rcv, args: gw.Args, binary: o.Binary}
	if o.Args != nil {
		r.args = o.Args
	}
	return r
}

// Args are the gateway's command-line arguments.
func (r *Rig) Args() []string { return r.args }

// Start runs the gateway binary (same ports and queue directory every time) and
// waits until it is ready.
func (r *Rig) Start(t tb.T) *e2e.Collector {
	t.Helper()
	return e2e.Start(t, "", e2e.Options{Env: r.GW.Env, Args: r.args, Binary: r.binary, ReadyTimeout: 90 * time.Second})
}

// Sender is a fluent-bit-like sender to the gateway's OTLP/HTTP receiver.
func (r *Rig) Sender(workers int, rate float64) *e2e.Sender {
	return e2e.NewSender(e2e.SenderOptions{
		URL: r.GW.HTTPURL + "/v1/logs", TLS: r.Rcv.Client, Workers: workers, Rate: rate,
	})
}

// Settle stops feeding, lets the sender finish retrying what it holds, and fails
// if a chunk was dropped (a non-retryable status) or never acknowledged.
func Settle(t tb.T, cancel context.CancelFunc, s *e2e.Sender, timeout time.Duration) e2e.SenderStats {
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

// ExpectDelivered waits until every acknowledged record reached the sink, then
// fails on any missing one and reports duplicates (at-least-once allows them).
func ExpectDelivered(t tb.T, sink *otlpfixture.Sink, acked []int64, timeout time.Duration) otlpfixture.LossReport {
	t.Helper()
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged: the scenario did not run")
	}
	// Give up early once nothing has arrived for a while: what is missing then
	// is lost, not late.
	deadline := time.Now().Add(timeout)
	var rep otlpfixture.LossReport
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

// Result is what a scenario measured, for the benchmark's report.
type Result struct {
	Acked, Missing, Duplicated int
	Statuses                   map[int]int // receiver answers per attempt
	Notes                      []string
	Soak                       *Soak // RunChurnSoak's series and per-cycle figures
}

// note logs a finding and keeps it for the report.
func (r *Result) note(t tb.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	r.Notes = append(r.Notes, msg)
	t.Logf("%s", msg)
}

func (r *Result) settled(st e2e.SenderStats) {
	r.Acked, r.Statuses = st.AckedRecords, st.Statuses
}

func (r *Result) delivered(rep otlpfixture.LossReport) {
	r.Missing, r.Duplicated = rep.Missing, rep.Duplicated
}

// Records is how many records chunks hold.
func Records(chunks []e2e.Chunk) int {
	n := 0
	for _, c := range chunks {
		n += c.N
	}
	return n
}
