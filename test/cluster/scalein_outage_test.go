// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// drainTimeout is the relays' drain timeout while a test keeps the backend down.
const drainTimeout = "RELAY_DRAIN_TIMEOUT=30s"

// outageOnThreeRelays scales the relays to three, cuts the backend at backendIP
// off and runs numbered load run (1,000 records/s) until otelcol-relay-2, the
// ordinal a scale-in removes, queues records. At the end of the test the backend
// is back and the relays are two again.
func outageOnThreeRelays(t *testing.T, backendIP, run string) *load {
	t.Helper()
	t.Cleanup(func() {
		_ = getJSON("http://"+backendIP+":8080/down?on=false", nil)
		scaleToTwo(t)
	})
	setHPA(t, 3, 10) // below minReplicas the HPA scales up at once
	waitRelays(t, 3)
	if err := getJSON("http://"+backendIP+":8080/down?on=true", nil); err != nil {
		t.Fatal(err)
	}
	l := startLoad(t, run, 1000, 3)
	eventually(t, "otelcol-relay-2 queues records", readyBudget, func() string {
		v, err := selfMetric(relayPods(t)["otelcol-relay-2"].ip, "otelcol_exporter_queue_size")
		if err != nil || v < 10 {
			return fmt.Sprintf("queue size %v (%v)", v, err)
		}
		return ""
	})
	return l
}

// TestScaleInBackendDown scales the relays from three to zero while the backend is
// unreachable for the whole drain, with the shipped hand-off on: no relay stays to
// take a queue (the three drain at once, podManagementPolicy Parallel, and each
// refuses the others' hand-offs as draining), so each drain gives up at its
// timeout, each pod exits within the grace period, and what each held stays on its
// retained volume (counted here); the shipped alert OtelcolRelayDataLeftOnVolume,
// evaluated by a real Prometheus (Debian's) that scrapes what the shipped monitors
// make of the install, becomes active on the real otelcol_admission_drain_queue_size;
// and once the backend is back and the ordinals run again on their volumes,
// everything is delivered and the alert clears. The drain's timeout is 30 s
// (drainTimeout), not the shipped 100, so that the test waits 30 s for drains that
// cannot finish. The HPA does not act on a StatefulSet scaled to zero, so the
// scale is the operator's `kubectl scale`, and so is the way back.
func TestScaleInBackendDown(t *testing.T) {
	install(t)
	// The hand-off starts 5 s into the drain, well before it gives up at 30 s:
	// each relay with a queue asks the others, which refuse as draining.
	relayEnv(t, drainTimeout, "RELAY_HANDOFF_START_AFTER=5s", "RELAY_HANDOFF_ENABLED=true")
	scaleToTwo(t)
	backendIP := podIP(t, backendNS, "app=backend")
	prom := startPrometheus(t)
	l := outageOnThreeRelays(t, backendIP, "outage")
	l.setRate(t, 0)

	// A relay that no sender's connection reached queues nothing, and its
	// drain ends drained; the others give up.
	names := []string{"otelcol-relay-0", "otelcol-relay-1", "otelcol-relay-2"}
	ends, queued := map[string]*podEnd{}, map[string]float64{}
	for n, p := range relayPods(t) {
		queued[n], _ = selfMetric(p.ip, "otelcol_exporter_queue_size")
	}
	for _, n := range names {
		ends[n] = watchEnd(t, n)
	}
	start := time.Now()
	mustKubectl(t, "", "-n", relayNS, "scale", "statefulset/otelcol-relay", "--replicas=0")
	waitRelays(t, 0)
	t.Logf("the relays scaled to zero in %s, backend down", time.Since(start).Round(time.Second))
	stranded := map[string]int{}
	for _, n := range names {
		left, per := queuedOnVolume(t, "queue-"+n)
		t.Logf("%s queued %.0f bytes; left on the retained volume queue-%s: %d queue items %v", n, queued[n], n, left, per)
		if queued[n] > 0 {
			ends[n].check(t, n, drainGaveUpLog)
			if !ends[n].logged("this relay is draining") {
				t.Errorf("%s: no peer's refusal (\"this relay is draining\") in its log: it never tried to hand off", n)
			}
		} else {
			ends[n].check(t, n, drainedLog)
		}
		if left > 0 {
			stranded[n] = left
		} else if queued[n] > 0 {
			t.Errorf("%s queued %.0f bytes with the backend down and nowhere to hand them, yet its volume holds nothing", n, queued[n])
		}
	}
	if stranded["otelcol-relay-2"] == 0 {
		t.Errorf("nothing left on queue-otelcol-relay-2 with the backend down and no relay to take it: the test did not test a stranded queue (%v)", stranded)
	}
	for n := range stranded {
		eventually(t, "OtelcolRelayDataLeftOnVolume active for "+n, 2*time.Minute, func() string {
			return prom.alert(t, "OtelcolRelayDataLeftOnVolume", n)
		})
	}

	if err := getJSON("http://"+backendIP+":8080/down?on=false", nil); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, "", "-n", relayNS, "scale", "statefulset/otelcol-relay", "--replicas=3")
	waitRelays(t, 3)
	st, sc := l.finish(t, backendIP)
	t.Logf("scale to zero: %d acknowledged, %d received, %d missing, %d duplicated; left on the volumes until the ordinals ran again: %v",
		st.Acked, sc.Distinct, sc.Missing, sc.Duplicates, stranded)
	if sc.Missing != 0 {
		t.Errorf("%d acknowledged records never reached the backend (first: %v)", sc.Missing, sc.FirstMissing)
	}
	queuesEmpty(t)
	for n := range stranded {
		eventually(t, "OtelcolRelayDataLeftOnVolume clears once "+n+" runs again", 2*time.Minute, func() string {
			if why := prom.alert(t, "OtelcolRelayDataLeftOnVolume", n); why == "" {
				return "still active"
			}
			return ""
		})
	}
}

// TestScaleInBackendDownHandsOff removes a replica while the backend is
// unreachable, with the shipped hand-off (peer_handoff) starting 5 s into the
// drain: otelcol-relay-2's exporter gives what it queued to otelcol-relay-0 or
// -1 over the relays' mutual TLS, through the headless Service and the
// NetworkPolicy, so its drain ends drained and its retained volume is empty;
// the peers deliver every acknowledged record once the backend is back. The load
// runs at handoffRate for handoffFill with the backend down first, so that
// otelcol-relay-2 queues several times what its exporter's four consumers hold in
// their retries (2,000 records each): the records the peers store in the first
// second of the hand-off are then the pod-to-pod rate, which the test logs beside
// the whole drain's.
const (
	handoffFill = 20 * time.Second
	handoffRate = 4000
)

func TestScaleInBackendDownHandsOff(t *testing.T) {
	install(t)
	relayEnv(t, "RELAY_DRAIN_TIMEOUT=60s", "RELAY_HANDOFF_START_AFTER=5s", "RELAY_HANDOFF_ENABLED=true")
	scaleToTwo(t)
	backendIP := podIP(t, backendNS, "app=backend")
	l := outageOnThreeRelays(t, backendIP, "handoff")
	l.setRate(t, handoffRate)
	time.Sleep(handoffFill)
	l.setRate(t, 0)
	queued, err := selfMetric(relayPods(t)["otelcol-relay-2"].ip, "otelcol_exporter_queue_size")
	if err != nil {
		t.Fatal(err)
	}
	taken := func() float64 {
		var sum float64
		for n, p := range relayPods(t) {
			if n == "otelcol-relay-2" {
				continue
			}
			v, err := selfMetric(p.ip, "otelcol_peer_handoff_taken_items")
			if err == nil {
				sum += v
			}
		}
		return sum
	}
	takenBefore := taken()

	end := watchEnd(t, "otelcol-relay-2")
	// The transfer itself, from the first record a peer stored to the last, as
	// otelcol-relay-2 counts them while it drains (its pod IP answers until it exits).
	ip := relayPods(t)["otelcol-relay-2"].ip
	watch := e2e.WatchCounter(func() (float64, bool) {
		v, err := selfMetric(ip, "otelcol_peer_handoff_sent_items")
		return v, err == nil
	}, 200*time.Millisecond)
	t.Cleanup(func() { watch.Stop() })
	start := time.Now()
	setHPA(t, 2, 2)
	waitRelays(t, 2)
	t.Logf("otelcol-relay-2 removed %s after the scale-in, backend down, %.0f bytes queued when the load stopped", time.Since(start).Round(time.Second), queued)
	end.check(t, "otelcol-relay-2", drainedLog)
	left, per := queuedOnVolume(t, "queue-otelcol-relay-2")
	if left != 0 {
		t.Errorf("%d queue items left on the retained volume queue-otelcol-relay-2 %v: the hand-off did not empty it", left, per)
	}
	handed := taken() - takenBefore
	if handed == 0 {
		t.Error("the peers took no record from otelcol-relay-2")
	}
	// RELAY_HANDOFF_START_AFTER below: the hand-off began 5 s after the deletion.
	if window := end.exitedAt.Sub(end.deletedAt) - 5*time.Second; window > 0 {
		t.Logf("hand-off, from its start to the pod's exit (the retries' next attempts and the shutdown included): %s, %.0f records/s, %.2f MiB/s (%.0f records, %.1f MiB queued)",
			window.Round(100*time.Millisecond), handed/window.Seconds(), queued/window.Seconds()/(1<<20), handed, queued/(1<<20))
	}
	if rise := watch.Stop(); !rise.First.IsZero() {
		// Sampled every 200 ms: a transfer shorter than that reads as 200 ms.
		w := max(rise.Last.Sub(rise.First), 200*time.Millisecond)
		perRecord := queued / (1 << 20) / max(handed, 1)
		t.Logf("hand-off transfer, pod to pod over mutual TLS: %.0f records (%.1f MiB) within a second of the first stored; all in %s from the first to the last (%.0f records/s, %.1f MiB/s), the last at their exporter's next retry",
			rise.InFirstSecond, rise.InFirstSecond*perRecord, w.Round(100*time.Millisecond), handed/w.Seconds(), queued/w.Seconds()/(1<<20))
	}

	if err := getJSON("http://"+backendIP+":8080/down?on=false", nil); err != nil {
		t.Fatal(err)
	}
	st, sc := l.finish(t, backendIP)
	t.Logf("hand-off on scale-in: %d acknowledged, %d received, %d missing, %d duplicated; the peers took %.0f records; %d items left on the volume",
		st.Acked, sc.Distinct, sc.Missing, sc.Duplicates, handed, left)
	if sc.Missing != 0 {
		t.Errorf("%d acknowledged records never reached the backend (first: %v)", sc.Missing, sc.FirstMissing)
	}
	queuesEmpty(t)

	// The ordinal runs again on the retained volume: it starts with nothing
	// queued, so it sends nothing of what it handed off.
	setHPA(t, 3, 10)
	p := waitRelays(t, 3)["otelcol-relay-2"]
	q, qerr := selfMetric(p.ip, "otelcol_exporter_queue_size")
	sent, _ := selfMetric(p.ip, "otelcol_exporter_sent_log_records")
	t.Logf("otelcol-relay-2 started again on queue-otelcol-relay-2: %.0f bytes queued (%v), %.0f records sent", q, qerr, sent)
	if qerr != nil || q != 0 {
		t.Errorf("otelcol-relay-2 started again on its volume with %.0f bytes queued (%v): the hand-off left a copy there", q, qerr)
	}
}

// TestRollingUpdateBackendDownHandsOff rolls the relays (a config change) while the
// backend is unreachable and both hold a queue: the StatefulSet replaces
// otelcol-relay-1, whose drain hands its queue to otelcol-relay-0, then
// otelcol-relay-0, whose drain hands everything it holds to the new
// otelcol-relay-1. Each old pod's drain ends drained (nothing stays on a volume a
// new pod would have to read) and exits 0 within the grace period; the new pods
// hold the queues; once the backend is back every acknowledged record arrives.
func TestRollingUpdateBackendDownHandsOff(t *testing.T) {
	install(t)
	relayEnv(t, "RELAY_DRAIN_TIMEOUT=60s", "RELAY_HANDOFF_START_AFTER=5s", "RELAY_HANDOFF_ENABLED=true")
	pinTwoRelays(t)
	backendIP := podIP(t, backendNS, "app=backend")
	l := startLoad(t, "rolling-outage", 1000, 2)
	queueWhileBackendDown(t, backendIP, l)

	reload := "10s"
	if relayEnvNow(t)["RELAY_OTLP_TLS_RELOAD_INTERVAL"] == reload {
		reload = "9s"
	}
	after := rollout(t, "config change, backend down", drainedLog, func() {
		mustKubectl(t, "", "-n", relayNS, "set", "env", "statefulset/otelcol-relay", "-c", "otelcol-relay",
			"RELAY_OTLP_TLS_RELOAD_INTERVAL="+reload)
	})
	var held float64
	for n, p := range after {
		v, err := selfMetric(p.ip, "otelcol_exporter_queue_size")
		taken, _ := selfMetric(p.ip, "otelcol_peer_handoff_taken_items")
		t.Logf("%s after the rollout: %.0f bytes queued (%v), %.0f records taken from a peer", n, v, err, taken)
		held += max(v, 0)
	}
	if held == 0 {
		t.Error("the new relays hold no queue: the old ones' data went nowhere they can deliver from")
	}

	if err := getJSON("http://"+backendIP+":8080/down?on=false", nil); err != nil {
		t.Fatal(err)
	}
	st, sc := l.finish(t, backendIP)
	t.Logf("rolling update during an outage: %d acknowledged, %d received, %d missing, %d duplicated",
		st.Acked, sc.Distinct, sc.Missing, sc.Duplicates)
	if sc.Missing != 0 {
		t.Errorf("%d acknowledged records never reached the backend (first: %v)", sc.Missing, sc.FirstMissing)
	}
	queuesEmpty(t)
}

// queueWhileBackendDown cuts the backend at backendIP off until the end of the
// test, waits until every relay pod queues 1 MiB of load l (the queues count
// bytes; 1 MiB is about a thousand records), then stops l: the relays hold queues
// that nothing adds to.
func queueWhileBackendDown(t *testing.T, backendIP string, l *load) {
	t.Helper()
	if err := getJSON("http://"+backendIP+":8080/down?on=true", nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = getJSON("http://"+backendIP+":8080/down?on=false", nil) })
	eventually(t, "every relay queues 1 MiB", readyBudget, func() string {
		for n, p := range relayPods(t) {
			if v, err := selfMetric(p.ip, "otelcol_exporter_queue_size"); err != nil || v < 1<<20 {
				return fmt.Sprintf("%s: %v bytes queued (%v)", n, v, err)
			}
		}
		return ""
	})
	l.setRate(t, 0)
	time.Sleep(3 * time.Second) // the last chunks handed out are acknowledged
}
