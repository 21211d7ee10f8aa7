// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"testing"
	"time"
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

// TestScaleInBackendDown removes a replica while the backend is unreachable for the
// whole drain, with the hand-off to peers off (RELAY_HANDOFF_ENABLED=false, as
// before peer_handoff, and what happens when no peer takes anything). The drain
// gives up at its timeout, the pod exits within the grace
// period, and what it held stays on its retained volume (counted here); the shipped
// alert OtelcolRelayDataLeftOnVolume, evaluated by a real Prometheus (Debian's) that
// scrapes what the shipped monitors make of the install, becomes active on the real otelcol_admission_drain_queue_size; and once
// the backend is back and the ordinal runs again on that volume, everything is
// delivered and the alert clears. The drain's timeout is 30 s (drainTimeout), not the
// shipped 100, so that the test waits 30 s for a drain that cannot finish.
func TestScaleInBackendDown(t *testing.T) {
	install(t)
	relayEnv(t, drainTimeout, "RELAY_HANDOFF_ENABLED=false")
	scaleToTwo(t)
	backendIP := podIP(t, backendNS, "app=backend")
	prom := startPrometheus(t)
	l := outageOnThreeRelays(t, backendIP, "outage")
	l.setRate(t, 0)

	end := watchEnd(t, "otelcol-relay-2")
	start := time.Now()
	setHPA(t, 2, 2)
	waitRelays(t, 2)
	t.Logf("otelcol-relay-2 removed %s after the scale-in, backend down", time.Since(start).Round(time.Second))
	end.check(t, "otelcol-relay-2", drainGaveUpLog)
	left, per := queuedOnVolume(t, "queue-otelcol-relay-2")
	t.Logf("left on the retained volume queue-otelcol-relay-2: %d queue items %v", left, per)
	if left == 0 {
		t.Errorf("nothing left on the volume with the backend down: the test did not test a stranded queue")
	}
	eventually(t, "OtelcolRelayDataLeftOnVolume active for otelcol-relay-2", 2*time.Minute, func() string {
		return prom.alert(t, "OtelcolRelayDataLeftOnVolume", "otelcol-relay-2")
	})

	if err := getJSON("http://"+backendIP+":8080/down?on=false", nil); err != nil {
		t.Fatal(err)
	}
	setHPA(t, 3, 10)
	waitRelays(t, 3)
	_, sc := l.finish(t, backendIP)
	if sc.Missing != 0 {
		t.Errorf("%d acknowledged records never reached the backend (first: %v)", sc.Missing, sc.FirstMissing)
	}
	queuesEmpty(t)
	eventually(t, "OtelcolRelayDataLeftOnVolume clears once otelcol-relay-2 runs again", 2*time.Minute, func() string {
		if why := prom.alert(t, "OtelcolRelayDataLeftOnVolume", "otelcol-relay-2"); why == "" {
			return "still active"
		}
		return ""
	})
}

// TestScaleInBackendDownHandsOff removes a replica while the backend is
// unreachable, with the shipped hand-off (peer_handoff) starting 5 s into the
// drain: otelcol-relay-2's exporter gives what it queued to otelcol-relay-0 or
// -1 over the relays' mutual TLS, through the headless Service and the
// NetworkPolicy, so its drain ends drained and its retained volume is empty;
// the peers deliver every acknowledged record once the backend is back. The load
// runs for handoffFill with the backend down first, so that the hand-off moves
// megabytes; the test logs its rate, from the hand-off's start to the pod's exit
// (a lower bound: the exit includes the shutdown).
const handoffFill = 20 * time.Second

func TestScaleInBackendDownHandsOff(t *testing.T) {
	install(t)
	relayEnv(t, "RELAY_DRAIN_TIMEOUT=60s", "RELAY_HANDOFF_START_AFTER=5s", "RELAY_HANDOFF_ENABLED=true")
	scaleToTwo(t)
	backendIP := podIP(t, backendNS, "app=backend")
	l := outageOnThreeRelays(t, backendIP, "handoff")
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
		t.Logf("hand-off rate, over the %s from its start to the pod's exit: %.0f records/s, %.2f MiB/s (%.0f records, %.1f MiB queued)",
			window.Round(100*time.Millisecond), handed/window.Seconds(), queued/window.Seconds()/(1<<20), handed, queued/(1<<20))
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
}
