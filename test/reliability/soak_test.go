// SPDX-License-Identifier: Apache-2.0

//go:build reliability

package reliability_test

import (
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/scenario"
)

// Churn soak (scenario.RunChurnSoak says what is checked): 2,000 records/s
// throughout while the backend refuses for 8 s and then accepts for at least
// 8 s and until the backlog has arrived, three times. Each outage queues about
// 20-30 MB (three or more 8 MiB segments), so segments are written, emptied
// and reclaimed every cycle; `make bench` runs the same soak for minutes.
func TestChurnSoakDiskBounded(t *testing.T) {
	o := scenario.ChurnSoak{
		Rate: 2000, Cycles: 3, Down: 8 * time.Second, Up: 8 * time.Second,
		DrainTimeout: 2 * time.Minute, Sample: time.Second, MaxGrowth: 1.5,
		Settle: 2 * time.Minute, Deliver: 3 * time.Minute,
	}
	r := scenario.NewRig(t, scenario.RigOptions{MaxSeq: int64(o.Records())})
	scenario.RunChurnSoak(t, r, o, &scenario.Result{})
}
