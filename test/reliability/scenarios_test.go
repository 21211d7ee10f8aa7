// SPDX-License-Identifier: Apache-2.0

//go:build reliability

package reliability_test

import (
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/scenario"
)

// The scenarios of internal/scenario at test scale (the package says what each
// checks; `make bench` runs them at full scale).

// Backend outage: 2,000 records/s for 10 s against a refusing backend.
func TestBackendOutage(t *testing.T) {
	scenario.RunBackendOutage(t, newRig(t, "").Rig, scenario.Outage{
		Rate: 2000, Duration: 10 * time.Second, Poll: 250 * time.Millisecond,
		Settle: 2 * time.Minute, Deliver: 3 * time.Minute,
	}, &scenario.Result{})
}

// Crash: kill -9 with 15,000 of 60,000 records acknowledged, and 10,000 more
// after the restart on the same queue directory.
func TestKill9UnderLoad(t *testing.T) {
	scenario.RunKill9(t, newRig(t, "").Rig, scenario.Restart{
		Chunks: e2e.EncodeChunks(0, 600, 100), Workers: 4,
		StopAt: 15000, MoreAfterRestart: 10000,
		Settle: 3 * time.Minute, Deliver: 3 * time.Minute,
	}, &scenario.Result{})
}

// Graceful stop: SIGTERM at 8,000 records/s with 10,000 acknowledged, restart,
// 40,000 more acknowledged (so at least 50,000 in all, of 80,000).
func TestSIGTERMUnderLoadThenRestart(t *testing.T) {
	scenario.RunSIGTERM(t, newRig(t, "").Rig, scenario.Restart{
		Chunks: e2e.EncodeChunks(0, 800, 100), Workers: 4, Rate: 8000,
		StopAt: 10000, MoreAfterRestart: 40000,
		Settle: 3 * time.Minute, Deliver: 3 * time.Minute,
	}, &scenario.Result{})
}

// Overload: 32 workers x 4,000-record chunks (about 4 MiB each, decoded) for
// 20 s inside a 512 MiB memory cgroup, far more than the gateway sustains, so
// requests pile up in the receiver (scenario.RunOverload says what is checked).
func TestOverloadInMemoryCgroup(t *testing.T) {
	scenario.RunOverload(t, newRig(t, "").Rig, scenario.Overload{
		Limit: 512 << 20, Chunks: e2e.EncodeChunks(0, 60, 4000), Workers: 32,
		Duration: 20 * time.Second, Settle: 3 * time.Minute, Deliver: 3 * time.Minute,
	}, &scenario.Result{})
}

// Scale-in during an outage: three peer relays queue 60,000 records with the
// backend down; otelcol-relay-2's drain hands its queue to the others 2 s in
// (start_after), and everything arrives once the backend returns.
func TestScaleInDuringOutageHandsOff(t *testing.T) {
	scenario.RunScaleInHandoff(t, scenario.ScaleIn{
		Records: 60000, Workers: 4, StartAfter: 2 * time.Second, DrainTimeout: 60 * time.Second,
		Settle: 2 * time.Minute, Deliver: 3 * time.Minute,
	}, &scenario.Result{})
}

// Scale-in during an outage with the peers' queues nearly full (16 MiB each,
// 10.9 MiB queued): they take what fits (2,000-record requests) and refuse the rest, which stays on
// otelcol-relay-2's volume and arrives once that ordinal runs again.
func TestScaleInDuringOutagePeersFull(t *testing.T) {
	scenario.RunScaleInHandoff(t, scenario.ScaleIn{
		Records: 30000, Workers: 4, StartAfter: 2 * time.Second, DrainTimeout: 15 * time.Second,
		Settle: 2 * time.Minute, Deliver: 3 * time.Minute,
		PeersFull: true, Env: []string{"OTEL_EXPORTER_DEFAULT_QUEUE_BYTES=16777216"},
	}, &scenario.Result{})
}
