// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

// The measurement the gateway's startupProbe is sized from: how long
// config/gateway.yaml takes to become healthy on a ~1 GiB persistent queue
// (queue_storage reads its segments to rebuild its index before the exporters
// start; file_storage, shipped before, copied its whole bbolt file).

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// startupQueueMiB is the queue the test starts on by default: 256 MiB keeps it
// short in `make test`; the time grows with the file (compaction copies it), so
// it is scaled to 1 GiB before the budget check. OTELCOL_RELAY_STARTUP_QUEUE_MIB=1024
// measures the full figure deploy/docs/troubleshooting.md quotes.
const startupQueueMiB = 256

// TestStartupOnFullQueue runs config/gateway.yaml with its backend down until
// its persistent queue holds ~1 GiB on disk, stops it the hard way (SIGKILL, as
// an OOM kill or a failed liveness probe would), starts it again on the same
// directory and reports the time until the health endpoint answers. That time,
// scaled to 1 GiB, must fit the gateway's startupProbe budget (failureThreshold x
// periodSeconds); nothing queued may be lost on the way.
func TestStartupOnFullQueue(t *testing.T) {
	queueMiB := queueMiBFromEnv(t, "OTELCOL_RELAY_STARTUP_QUEUE_MIB", startupQueueMiB, 1400)
	// 1.5 GiB per signal: room above the 1 GiB written (the gateway's default
	// bound is 512 MiB).
	gw := backendDownGateway(t, "OTEL_EXPORTER_DEFAULT_QUEUE_BYTES=1610612736")
	start := e2e.Options{Env: gw.Env, Args: gw.Args, ReadyTimeout: 90 * time.Second}
	budget := startupProbeBudget(t)
	r := restartOnFilledQueue(t, gw, budget, start, start,
		func() { fillQueue(t, gw.HTTPURL, gw.QueueDir, int64(queueMiB)<<20) },
		func() float64 { return e2e.LogQueueBytes(gw.MetricsAddr) })

	t.Logf("queue: %.0f MiB queued (%.0f MiB on disk), written in %s; after the restart the queue holds %.0f MiB",
		r.queued/(1<<20), e2e.MiB(r.onDisk), r.filled.Round(time.Second), r.after/(1<<20))
	perGiB := time.Duration(float64(r.healthy) * 1024 / float64(queueMiB))
	t.Logf("time to healthy on that queue: %s, %s scaled to 1 GiB (startupProbe budget %s)",
		r.healthy.Round(100*time.Millisecond), perGiB.Round(100*time.Millisecond), budget)
	if perGiB > budget {
		t.Errorf("healthy after %s on %d MiB, %s for 1 GiB: over the startupProbe budget %s; raise its failureThreshold", r.healthy, queueMiB, perGiB, budget)
	}
}

// backendDownGateway is the gateway environment with env appended and a
// default backend that is down for the whole test: the queue only grows.
func backendDownGateway(t *testing.T, env ...string) *e2e.Gateway {
	t.Helper()
	return e2e.NewGateway(t, e2e.GatewayOptions{
		BackendURL: "https://" + e2e.FreeAddr(t),
		Backend:    e2e.NewBackendTLS(t, "default"),
		Env:        env,
	})
}

// queueRestart is what a startup test measures across one crash on a filled
// queue.
type queueRestart struct {
	queued, after   float64       // bytes queued before the crash, and after the restart
	onDisk          int64         // the queue directory after the crash
	filled, healthy time.Duration // the fill; the restart until the health endpoint answers
}

// restartOnFilledQueue is the scenario the startupProbes are sized from: it
// starts the collector with first, fills its queue, stops it the hard way
// (SIGKILL, as an OOM kill or a failed liveness probe would), starts it again
// with again on the same directory and waits at most budget for the health
// endpoint. Nothing queued may be lost on the way.
func restartOnFilledQueue(t *testing.T, gw *e2e.Gateway, budget time.Duration, first, again e2e.Options, fill func(), queueBytes func() float64) queueRestart {
	t.Helper()
	c := e2e.Start(t, "", first)
	fillStart := time.Now()
	fill()
	// The persistent queue writes each item before the receiver answers: what
	// it reports once the fill returns is what the crash must keep.
	r := queueRestart{filled: time.Since(fillStart), queued: queueBytes()}
	if err := c.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Wait(30 * time.Second)
	r.onDisk = e2e.DirBytes(gw.QueueDir)

	// The restart is what is measured: the health endpoint, not Start, waits.
	again.NoWait = true
	restart := time.Now()
	e2e.Start(t, "", again)
	e2e.WaitHTTP(t, "http://"+gw.HealthAddr+"/", http.StatusOK, budget)
	r.healthy = time.Since(restart)
	r.after = queueBytes()
	if r.after < r.queued*0.99 {
		t.Errorf("after the restart the queue holds %.0f MiB of the %.0f MiB queued before the crash", r.after/(1<<20), r.queued/(1<<20))
	}
	return r
}

// fillQueue sends 4 MiB log requests from four clients until the queue directory
// holds want bytes.
func fillQueue(t *testing.T, url, dir string, want int64) {
	t.Helper()
	ld := otlpfixture.FluentBitLogs(4000, 0) // ~1 KB records, ~4 MiB a request
	body, ct, _, err := otlpfixture.EncodeLogs(ld, otlpfixture.Encoding{})
	if err != nil {
		t.Fatal(err)
	}
	client := e2e.NewHTTPClient(url, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var done atomic.Bool
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() && ctx.Err() == nil {
				code, resp, err := client.Post(ctx, "/v1/logs", body, ct, "")
				if err == nil && code != http.StatusOK {
					err = fmt.Errorf("POST /v1/logs: %d %s", code, resp)
				}
				if err != nil && ctx.Err() == nil {
					firstErr.CompareAndSwap(nil, err)
					done.Store(true)
				}
			}
		}()
	}
	ok := otlpfixture.WaitFor(5*time.Minute, func() bool {
		return e2e.DirBytes(dir) >= want || done.Load()
	})
	done.Store(true)
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		t.Fatalf("filling the queue: %v", err)
	}
	if !ok {
		t.Fatalf("queue directory holds %.0f MiB after 5 minutes, want %.0f", e2e.MiB(e2e.DirBytes(dir)), e2e.MiB(want))
	}
}

// queueMiBFromEnv is the queue size in MiB the variable name asks for (16 to
// most), or def when it is unset.
func queueMiBFromEnv(t *testing.T, name string, def, most int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 16 || n > most {
		t.Fatalf("%s=%q: want MiB between 16 and %d", name, v, most)
	}
	return n
}

// startupProbeBudget is how long the startupProbe of the StatefulSet in file
// (under deploy/) lets the container take to become healthy before the kubelet
// restarts it.
func startupProbeBudget(t *testing.T, file ...string) time.Duration {
	t.Helper()
	if len(file) == 0 {
		file = []string{"base", "statefulset.yaml"}
	}
	raw, err := os.ReadFile(manifest.Dir(file...))
	if err != nil {
		t.Fatal(err)
	}
	var sts appsv1.StatefulSet
	manifest.Unmarshal(t, string(raw), &sts)
	p := sts.Spec.Template.Spec.Containers[0].StartupProbe
	if p == nil {
		t.Fatalf("deploy/%s has no startupProbe", filepath.Join(file...))
	}
	return time.Duration(p.FailureThreshold*p.PeriodSeconds+p.InitialDelaySeconds) * time.Second
}
