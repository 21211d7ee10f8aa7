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
