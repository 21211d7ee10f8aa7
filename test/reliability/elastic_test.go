// SPDX-License-Identifier: Apache-2.0

//go:build reliability

package reliability_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// fleet is N relays (config/gateway.yaml + receiver-tls.yaml, each with its own
// ports and queue directory, like the pods of the StatefulSet with their PVCs)
// behind a per-connection round-robin proxy (kube-proxy), sending to one backend.
type fleet struct {
	sink  *otlpfixture.Sink
	rcv   *e2e.ReceiverTLS
	proxy *e2e.RoundRobinProxy
	gws   []*e2e.Gateway
	cols  []*e2e.Collector
}

func newFleet(t *testing.T, n int, env ...string) *fleet {
	t.Helper()
	backend := e2e.NewBackendTLS(t, "default")
	f := &fleet{sink: e2e.NewSink(t, otlpfixture.SinkOptions{TLS: backend.Server}), rcv: e2e.NewReceiverTLS(t)}
	for range n {
		f.gws = append(f.gws, e2e.NewGateway(t, e2e.GatewayOptions{
			BackendURL: "https://" + f.sink.HTTPAddr, Backend: backend, Receiver: f.rcv, Env: env,
		}))
	}
	f.cols = make([]*e2e.Collector, n)
	f.proxy = e2e.NewRoundRobinProxy(t)
	return f
}

// start runs relay i (again, on the same queue directory when it ran before).
func (f *fleet) start(t *testing.T, i int) {
	t.Helper()
	f.cols[i] = f.gws[i].Start(t)
}

// route makes relays the Service's endpoints.
func (f *fleet) route(relays ...int) {
	var addrs []string
	for _, i := range relays {
		addrs = append(addrs, strings.TrimPrefix(f.gws[i].HTTPURL, "https://"))
	}
	f.proxy.SetBackends(addrs...)
}

func (f *fleet) sender(workers int, rate float64) *e2e.Sender {
	return e2e.NewSender(e2e.SenderOptions{URL: "https://" + f.proxy.Addr + "/v1/logs", TLS: f.rcv.Client, Workers: workers, Rate: rate})
}

// accepted is how many log records relay i's receiver accepted so far.
func (f *fleet) accepted(i int) float64 {
	return max(0, e2e.MetricSum(f.gws[i].MetricsAddr, "otelcol_receiver_accepted_log_records"))
}

type drainAnswer struct {
	code int
	body string
	err  error
}

// drain is the kubelet's preStop httpGet on relay i.
func (f *fleet) drain(i int) <-chan drainAnswer {
	ch := make(chan drainAnswer, 1)
	go func() {
		code, body, err := f.gws[i].Drain(3 * time.Minute)
		ch <- drainAnswer{code: code, body: body, err: err}
	}()
	return ch
}

// stop is the kubelet's SIGTERM after the hook; the relay must exit 0.
func (f *fleet) stop(t *testing.T, i int) {
	t.Helper()
	if code, err := f.cols[i].Stop(time.Minute); err != nil || code != 0 {
		t.Errorf("relay %d after SIGTERM: exit %d, %v", i, code, err)
	}
}

// shares waits (up to timeout) until each relay in relays accepted at least
// minShare of the records accepted since base, with at least minTotal in all.
func (f *fleet) shares(t *testing.T, relays []int, base map[int]float64, minShare float64, minTotal float64, timeout time.Duration) {
	t.Helper()
	var got []float64
	var total float64
	ok := otlpfixture.WaitFor(timeout, func() bool {
		got, total = got[:0], 0
		for _, i := range relays {
			d := f.accepted(i) - base[i]
			got, total = append(got, d), total+d
		}
		if total < minTotal {
			return false
		}
		for _, d := range got {
			if d/total < minShare {
				return false
			}
		}
		return true
	})
	var parts []string
	for k, d := range got {
		parts = append(parts, fmt.Sprintf("relay %d: %.0f (%.0f%%)", relays[k], d, 100*d/max(total, 1)))
	}
	t.Logf("records accepted per relay after the scale-up: %s; proxy connections %v", strings.Join(parts, ", "), f.proxy.Connections())
	if !ok {
		t.Errorf("within %s not every relay received %.0f%% of at least %.0f records", timeout, 100*minShare, minTotal)
	}
}

// TestScaleOutAndIn: 1 -> 3 -> 1 relays under a steady fluent-bit load of 5,000
// records/s, scaled down the way the kubelet does it (preStop GET /drain, then
// SIGTERM). New relays get their share of the traffic through connection
// recycling; nothing acknowledged is lost; with the backend up the removed
// relays' queues are empty on disk; with the backend down what is left is
// reported, stays on the relay's volume and is delivered when it starts again.
func TestScaleOutAndIn(t *testing.T) {
	t.Run("backend up", func(t *testing.T) { scaleOutAndIn(t, false) })
	t.Run("backend down during the scale-down", func(t *testing.T) { scaleOutAndIn(t, true) })
}

func scaleOutAndIn(t *testing.T, backendDown bool) {
	drainTimeout := "90s"
	if backendDown {
		drainTimeout = "8s" // nothing can drain: keep the test short
	}
	f := newFleet(t, 3, "RELAY_MAX_CONNECTION_AGE=3s", "RELAY_DRAIN_TIMEOUT="+drainTimeout)
	f.start(t, 0)
	f.route(0)

	const rate = 5000.0
	chunks := e2e.EncodeChunks(0, 3000, 100) // 300,000 records: 60 s at 5,000/s
	s := f.sender(6, rate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	s.Send(ctx, chunks)
	if !otlpfixture.WaitFor(time.Minute, func() bool { return s.AckedRecords() >= 10000 }) {
		t.Fatalf("load did not get going on one relay: acked %d", s.AckedRecords())
	}

	// Scale up: two pods start and become endpoints.
	f.start(t, 1)
	f.start(t, 2)
	base := map[int]float64{0: f.accepted(0), 1: f.accepted(1), 2: f.accepted(2)}
	f.route(0, 1, 2)
	f.shares(t, []int{0, 1, 2}, base, 0.2, 30000, 2*time.Minute)

	// Scale down to 1: the kubelet calls the preStop hook of the two pods,
	// and the endpoints leave the Service a moment later.
	if backendDown {
		f.sink.Refuse(true)
		// Acknowledged records pile up in the queues of the relays about to be
		// drained. Which relay a sender's connections reach is up to the
		// proxy's round robin and the client's connection reuse, so wait for
		// each rather than for a fixed time.
		for _, i := range []int{1, 2} {
			if !otlpfixture.WaitFor(30*time.Second, func() bool { return e2e.LogQueueBytes(f.gws[i].MetricsAddr) > 0 }) {
				t.Fatalf("relay %d took no records in 30 s after the backend went down: the scenario cannot test a leftover", i)
			}
		}
	}
	drains := []<-chan drainAnswer{nil, f.drain(1), f.drain(2)}
	time.Sleep(time.Second) // kube-proxy lags the endpoint change
	f.route(0)
	for _, i := range []int{1, 2} {
		ans := <-drains[i]
		t.Logf("relay %d GET /drain: %d %q", i, ans.code, ans.body)
		gauge := e2e.MetricSum(f.gws[i].MetricsAddr, "otelcol_admission_drain_queue_size")
		draining := e2e.MetricSum(f.gws[i].MetricsAddr, "otelcol_admission_draining")
		switch {
		case ans.err != nil:
			t.Errorf("relay %d: /drain: %v", i, ans.err)
		case !backendDown && (ans.code != http.StatusOK || gauge != 0):
			t.Errorf("relay %d with the backend up: /drain %d %q, otelcol_admission_drain_queue_size %v; want 200, 0", i, ans.code, ans.body, gauge)
		case backendDown && (ans.code != http.StatusInternalServerError || gauge <= 0 || !strings.Contains(ans.body, fmt.Sprintf("%.0f left", gauge))):
			t.Errorf("relay %d with the backend down: /drain %d %q, otelcol_admission_drain_queue_size %v; want 500 naming the leftover the metric shows", i, ans.code, ans.body, gauge)
		}
		if draining != 1 {
			t.Errorf("relay %d: otelcol_admission_draining %v after /drain, want 1", i, draining)
		}
		e2e.WaitHTTP(t, "http://"+f.gws[i].DrainAddr+"/ready", http.StatusServiceUnavailable, 5*time.Second)
		f.stop(t, i)
		left, err := e2e.ReadQueueDir(f.gws[i].QueueDir)
		if err != nil {
			t.Fatalf("relay %d queue: %v", i, err)
		}
		t.Logf("relay %d stopped; its queue directory holds %d requests (%d bytes): %v", i, left.Requests, left.Bytes, left.Files)
		if !backendDown && (left.Requests != 0 || left.Bytes != 0) {
			t.Errorf("relay %d drained with the backend up, yet %d requests (%d bytes) stay in its queue directory", i, left.Requests, left.Bytes)
		}
		if backendDown {
			if left.Requests == 0 {
				t.Errorf("relay %d: the backend was down, yet nothing stayed in its queue: the scenario did not test a leftover", i)
			}
			if !strings.Contains(f.cols[i].Output(), "Drain gave up") || !strings.Contains(f.cols[i].Output(), fmt.Sprintf(`"queue_size_left": %.0f`, gauge)) {
				t.Errorf("relay %d: no log line naming the %.0f left", i, gauge)
			}
		}
	}

	// One relay carries the load for a while, then the sender stops.
	acked := s.AckedRecords()
	if !otlpfixture.WaitFor(time.Minute, func() bool { return s.AckedRecords() >= acked+10000 }) {
		t.Errorf("after the scale-down only %d more records were acknowledged", s.AckedRecords()-acked)
	}
	st := settle(t, cancel, s, 2*time.Minute)
	elapsed := time.Since(start)
	t.Logf("offered %.0f records/s; acknowledged %d in %s (%.0f/s); refusals: %d x 503",
		rate, st.AckedRecords, elapsed.Round(time.Second), float64(st.AckedRecords)/elapsed.Seconds(), st.Statuses[http.StatusServiceUnavailable])

	if backendDown {
		// The backend is back; the removed relays' pods come back on their
		// volumes (the next scale-up, or the StatefulSet's ordinal returning).
		f.sink.Refuse(false)
		f.start(t, 1)
		f.start(t, 2)
	}
	rep := expectDelivered(t, f.sink, s.Acked(), 3*time.Minute)
	t.Logf("scale 1 -> 3 -> 1 (backend down at scale-down: %v): %s", backendDown, rep)
	if backendDown {
		for _, i := range []int{1, 2} {
			ans := <-f.drain(i)
			if ans.code != http.StatusOK {
				t.Errorf("relay %d restarted on its volume did not drain: %d %q", i, ans.code, ans.body)
			}
			f.stop(t, i)
			if left, err := e2e.ReadQueueDir(f.gws[i].QueueDir); err != nil || left.Requests != 0 {
				t.Errorf("relay %d after its restart and drain: %d requests left (%v)", i, left.Requests, err)
			}
		}
	}
}

// TestSIGTERMWithoutDrainWhileSending: a relay gets SIGTERM with no preStop hook
// while a sender keeps sending through the proxy. Every request is either
// acknowledged and delivered, or refused with a status fluent-bit retries; none
// gets an error that makes it drop the chunk. What the stopped relay still held
// is delivered when it starts again on its volume.
func TestSIGTERMWithoutDrainWhileSending(t *testing.T) {
	f := newFleet(t, 2, "RELAY_MAX_CONNECTION_AGE=3s")
	f.start(t, 0)
	f.start(t, 1)
	f.route(0, 1)
	chunks := e2e.EncodeChunks(0, 1500, 100)
	s := f.sender(6, 5000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Send(ctx, chunks)
	if !otlpfixture.WaitFor(time.Minute, func() bool { return s.AckedRecords() >= 15000 && f.accepted(1) > 0 }) {
		t.Fatalf("load did not get going: acked %d, relay 1 accepted %.0f", s.AckedRecords(), f.accepted(1))
	}
	if err := f.cols[1].Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	f.route(0)
	if code, err := f.cols[1].Wait(time.Minute); err != nil || code != 0 {
		t.Errorf("relay 1 after SIGTERM: exit %d, %v", code, err)
	}
	acked := s.AckedRecords()
	if !otlpfixture.WaitFor(time.Minute, func() bool { return s.AckedRecords() >= acked+10000 }) {
		t.Errorf("after the SIGTERM only %d more records were acknowledged", s.AckedRecords()-acked)
	}
	settle(t, cancel, s, 2*time.Minute) // fails on any status fluent-bit does not retry
	f.start(t, 1)                       // the ordinal comes back on its volume
	rep := expectDelivered(t, f.sink, s.Acked(), 3*time.Minute)
	t.Logf("SIGTERM without drain: %s", rep)
}

// TestStalledUploadsFreeAdmissionSlots: uploads that stall mid-body, more of
// them than there are admission slots, hold only body reads (a slot is taken
// once a body has arrived), so a live sender gets through while they are still
// open; body_read_timeout then cuts each with a retryable 503.
func TestStalledUploadsFreeAdmissionSlots(t *testing.T) {
	r := newRig(t, "", "RELAY_MAX_IN_FLIGHT_REQUESTS=2", "RELAY_BODY_READ_TIMEOUT=20s")
	r.start(t)
	addr := strings.TrimPrefix(r.gw.HTTPURL, "https://")
	var stalled []*e2e.StalledUpload
	for range 3 { // more than the 2 slots, fewer than the 4 body reads
		stalled = append(stalled, e2e.StartStalledUpload(t, addr, r.rcv.Client, 1<<20))
	}
	time.Sleep(500 * time.Millisecond) // let them start their bodies

	s := r.sender(1, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	s.Send(ctx, e2e.EncodeChunks(0, 5, 100))
	if !otlpfixture.WaitFor(15*time.Second, func() bool { return s.AckedRecords() == 500 }) {
		t.Errorf("a live sender got %d of 500 records acknowledged in 15s while %d uploads stalled mid-body", s.AckedRecords(), len(stalled))
	} else {
		t.Logf("live sender: 500 records acknowledged after %s", time.Since(start).Round(100*time.Millisecond))
	}
	for i, u := range stalled {
		if code, _, err := u.Answer(10 * time.Millisecond); err == nil {
			t.Errorf("stalled upload %d answered %d before body_read_timeout (20s), while the live sender was served", i, code)
		}
	}
	settle(t, cancel, s, time.Minute)
	for i, u := range stalled {
		code, retryAfter, err := u.Answer(45 * time.Second)
		if err != nil || code != http.StatusServiceUnavailable || retryAfter == "" {
			t.Errorf("stalled upload %d: %d (Retry-After %q), %v; want a retryable 503", i, code, retryAfter, err)
		}
	}
	expectDelivered(t, r.sink, s.Acked(), time.Minute)
}
