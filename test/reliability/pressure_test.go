// SPDX-License-Identifier: Apache-2.0

//go:build reliability

package reliability_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/testvolume"
)

// Full queue volume: a small queue volume (an 8 MiB tmpfs) while the backend is
// down. The receiver refuses with a retryable status and the collector says why;
// it does not crash, its queue is not corrupted (a restart on it works), and it
// recovers once the backend drains the queue and space frees.
//
// The queue bounds must fit the volume: when the disk fills before a bound is
// reached, upstream's persistent queue on file_storage (exporterhelper v0.165.0,
// persistentQueue.getNextItem) deletes items it cannot mark as dispatched on
// ENOSPC and acknowledged records are lost (1,700-1,900 of 30,000 per run,
// measured here before the rule existed). So the distribution refuses, at
// startup, queue bounds that do not fit (components/safeconfigconverter,
// queuevolume.go); with bounds that fit, the bound is reached first and nothing
// is lost. queue_storage sizes its segments from the volume (128 KiB here), so
// the same bounds fit with it, and it also survives the volume filling first
// (something else took the space): it refuses new items and keeps dispatching.
func TestQueueVolumeFull(t *testing.T) {
	// 1 MiB x 3 signals, twice over: 6 MiB of 8 (file_storage: the bbolt file
	// and its compaction copy; queue_storage: plus 3 x 128 KiB segments a signal).
	const bound = 1 << 20
	bounds := []string{"OTEL_EXPORTER_DEFAULT_QUEUE_BYTES=1048576"}
	t.Run("queue bounds fit the volume", func(t *testing.T) {
		queueVolumeFull(t, bounds, func(t *testing.T, _ *rig, col *e2e.Collector) {
			// The bound, not the volume, stopped the queue.
			if out := col.Output(); strings.Contains(out, "no space left on device") || strings.Contains(out, "queue volume full") {
				t.Errorf("the volume filled before the queue bounds:\n%s", e2e.Tail(out, 4000))
			}
		}, "sending queue is full")
	})
	t.Run("the volume fills before the queue bounds", func(t *testing.T) {
		queued := queueVolumeFull(t, bounds, func(t *testing.T, r *rig, _ *e2e.Collector) {
			// Something else on the volume takes all but 512 KiB: less than the
			// logs queue's bound.
			testvolume.Fill(t, filepath.Dir(r.gw.QueueDir), 512<<10)
		}, "queue volume full")
		if queued >= bound {
			t.Errorf("the logs queue held %.0f bytes, its bound (%d) when the volume filled: the bound was reached first", queued, bound)
		}
	})
	t.Run("queue bounds larger than the volume are refused at startup", func(t *testing.T) {
		vol := tmpfsVolume(t)
		r := newRig(t, filepath.Join(vol, "queue")) // the default 512 MiB per signal
		col := e2e.Start(t, "", e2e.Options{Env: r.gw.Env, Args: r.gw.Args, NoWait: true})
		code, err := col.Wait(time.Minute)
		if err != nil || code == 0 {
			t.Fatalf("gateway with 1.5 GiB of queue bounds on an 8 MiB volume: exit %d, %v; want a startup error", code, err)
		}
		for _, want := range []string{"persistent queues on " + filepath.Join(vol, "queue"), "but the volume at " + vol + " holds 8 MiB", " 536870912 bytes x 3 signals (logs, metrics, traces)"} {
			if !strings.Contains(col.Output(), want) {
				t.Errorf("startup error does not say %q:\n%s", want, col.Output())
			}
		}
	})
}

// tmpfsVolume mounts an 8 MiB tmpfs for the test (root only) and unmounts it after.
func tmpfsVolume(t *testing.T) string {
	t.Helper()
	vol := filepath.Join(t.TempDir(), "vol")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", vol).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v %s", err, out)
	}
	// Registered before the collector starts, so it runs after the collector stopped.
	t.Cleanup(func() { _ = exec.Command("umount", "-l", vol).Run() })
	return vol
}

// queueVolumeFull runs the gateway on an 8 MiB volume with env, calls prepare
// once it runs (the backend refuses), pushes more than the volume holds, and
// wants a retryable refusal with one of wantLogs in the collector's output, a
// restart on the full queue, and every acknowledged record delivered once the
// backend is back.
// It returns the bytes the logs queue held when the receiver refused.
func queueVolumeFull(t *testing.T, env []string, prepare func(*testing.T, *rig, *e2e.Collector), wantLogs ...string) float64 {
	vol := tmpfsVolume(t)
	r := newRig(t, filepath.Join(vol, "queue"), env...)
	col := r.start(t)
	r.sink.Refuse(true)
	prepare(t, r, col)
	const total = 300 * 100 // ~30 MiB decoded: more than the volume holds
	chunks := e2e.EncodeChunks(0, total/100, 100)
	s := r.sender(4, 5000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Send(ctx, chunks)

	if !otlpfixture.WaitFor(2*time.Minute, func() bool { return s.Stats().Statuses[http.StatusServiceUnavailable] > 0 }) {
		t.Fatalf("the receiver never refused although the queue volume is full; statuses %v", s.Stats().Statuses)
	}
	time.Sleep(2 * time.Second) // keep pushing against the full volume
	if !col.Running() {
		t.Fatalf("collector exited on a full queue volume:\n%s", col.Output())
	}
	out := col.Output()
	said := false
	for _, w := range wantLogs {
		said = said || strings.Contains(out, w)
	}
	if !said {
		t.Errorf("collector output does not say why it refuses (none of %q):\n%s", wantLogs, e2e.Tail(out, 4000))
	}
	queued := e2e.LogQueueBytes(r.gw.MetricsAddr)
	t.Logf("full: %d records acknowledged so far, %.0f bytes in the logs queue, %.1f MiB of the volume used, statuses %v",
		s.AckedRecords(), queued, e2e.MiB(e2e.DirBytes(vol)), s.Stats().Statuses)

	// Restart on the full volume: the queue must open again (not corrupted).
	if code, err := col.Stop(2 * time.Minute); err != nil || code != 0 {
		t.Errorf("SIGTERM with a full queue volume: exit %d, %v", code, err)
	}
	col = r.start(t)
	r.sink.Refuse(false)
	if !otlpfixture.WaitFor(3*time.Minute, func() bool { return s.AckedRecords() == total }) {
		t.Errorf("after the backend came back only %d of %d records were acknowledged", s.AckedRecords(), total)
	}
	st := settle(t, cancel, s, 3*time.Minute)
	rep := expectDelivered(t, r.sink, s.Acked(), 3*time.Minute)
	t.Logf("accepted %d records, refused %d attempts (503), delivered %d, missing %d",
		st.AckedRecords, st.Statuses[http.StatusServiceUnavailable], rep.Received, rep.Missing)
	if !col.Running() {
		t.Fatalf("collector exited:\n%s", col.Output())
	}
	return queued
}
