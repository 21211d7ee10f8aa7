// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/testvolume"
)

// A restart on a full volume: at start upstream's persistent queue deletes the
// items its consumers had in flight and offers them again under new keys
// (enqueueNotDispatchedReqs). Those re-offers must be taken on the full volume
// or the in-flight requests are lost.
func TestRestartOnFullVolumeKeepsInFlightRequests(t *testing.T) {
	vol := tmpfs(t, "1m")
	dir := filepath.Join(vol, "qs")
	down := newBackend()
	exp, ext := startQueue(t, dir, 64<<10, 2, down.push(false))
	acked := fillVolume(t, exp, 4000)
	for inFlight, _ := down.counts(); inFlight < 2; inFlight, _ = down.counts() {
		time.Sleep(10 * time.Millisecond)
	}
	// The process dies with two requests in flight: the store closes under the
	// queue, whose consumers then fail.
	if err := ext.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	close(down.up)
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	testvolume.Fill(t, vol, 0) // whatever room the queue left, something else took

	b := newBackend()
	close(b.up)
	exp, ext = startQueue(t, dir, 64<<10, 2, b.push(true))
	got := awaitDelivery(b, acked)
	stopQueue(t, exp, ext)
	t.Logf("1 MiB volume: %d requests acknowledged, 2 in flight at the restart, %d delivered after it", acked, got)
	if m := missing(b, acked); len(m) > 0 {
		t.Errorf("%d of %d acknowledged requests never delivered after a restart on the full volume: %v (%d empty requests sent)", len(m), acked, m, b.empty)
	}
}
