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
)

// Full queue volume: the queue volume fills up (an 8 MiB tmpfs) while the backend is
// down. The receiver refuses with a retryable status and the collector says why;
// it does not crash, its queue is not corrupted (a restart on it works), and it
// recovers once the backend drains the queue and space frees.
//
// The queue bounds must fit the volume: when the disk fills before a bound is
// reached, upstream's persistent queue (exporterhelper v0.165.0,
// persistentQueue.getNextItem) deletes items it cannot mark as dispatched on ENOSPC
// and acknowledged records are lost (1,700-1,900 of 30,000 per run, measured
// here before the rule existed). So the distribution refuses, at startup, queue
// bounds that do not fit (components/safeconfigconverter, queuevolume.go); with
// bounds that fit, the bound is reached first and nothing is lost.
func TestQueueVolumeFull(t *testing.T) {
	t.Run("queue bounds fit the volume", func(t *testing.T) {
		// 1 MiB x 3 signals, twice over for the bbolt file and its compaction copy: 6 MiB of 8.
		queueVolumeFull(t, []string{"OTEL_EXPORTER_DEFAULT_QUEUE_BYTES=1048576"}, "sending queue is full")
	})
	t.Run("queue bounds larger than the volume are refused at startup", func(t *testing.T) {
		vol := tmpfsVolume(t)
		r := newRig(t, filepath.Join(vol, "queue")) // the default 512 MiB per signal
		col := e2e.Start(t, "", e2e.Options{Env: r.gw.Env, Args: r.gw.Args, NoWait: true})
		code, err := col.Wait(time.Minute)
		if err != nil || code == 0 {
			t.Fatalf("gateway with 1.5 GiB of queue bounds on an 8 MiB volume: exit %d, %v; want a startup error", code, err)
		}
		for _, want := range []string{"persistent queues on " + filepath.Join(vol, "queue"), "but the volume at " + vol + " holds 8 MiB", "exporters::otlp_http/default: sending_queue::queue_size 536870912 bytes x 3 signals"} {
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

func queueVolumeFull(t *testing.T, env []string, wantLog string) {
	vol := tmpfsVolume(t)
	r := newRig(t, filepath.Join(vol, "queue"), env...)
	col := r.start(t)
	r.sink.Refuse(true)
	const total = 300 * 100 // ~30 MiB decoded: more than the volume holds
	chunks := e2e.EncodeChunks(0, total/100, 100)
	s := r.sender(4, 5000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Send(ctx, chunks)

	if !e2e.WaitFor(2*time.Minute, func() bool { return s.Stats().Statuses[http.StatusServiceUnavailable] > 0 }) {
		t.Fatalf("the receiver never refused although the queue volume is full; statuses %v", s.Stats().Statuses)
	}
	time.Sleep(2 * time.Second) // keep pushing against the full volume
	if !col.Running() {
		t.Fatalf("collector exited on a full queue volume:\n%s", col.Output())
	}
	if out := col.Output(); !strings.Contains(out, wantLog) {
		t.Errorf("collector output does not say why it refuses (no %q):\n%s", wantLog, e2e.Tail(out, 4000))
	}
	t.Logf("volume full: %d records acknowledged so far, statuses %v", s.AckedRecords(), s.Stats().Statuses)

	// Restart on the full volume: the queue must open again (not corrupted).
	if code, err := col.Stop(2 * time.Minute); err != nil || code != 0 {
		t.Errorf("SIGTERM with a full queue volume: exit %d, %v", code, err)
	}
	col = r.start(t)
	r.sink.Refuse(false)
	if !e2e.WaitFor(3*time.Minute, func() bool { return s.AckedRecords() == total }) {
		t.Errorf("after the backend came back only %d of %d records were acknowledged", s.AckedRecords(), total)
	}
	settle(t, cancel, s, 3*time.Minute)
	expectDelivered(t, r.sink, s.Acked(), 3*time.Minute)
	if !col.Running() {
		t.Fatalf("collector exited:\n%s", col.Output())
	}
}
