package e2e_test

// The measurement the gateway's startupProbe is sized from: how long the binary
// takes to become healthy on a ~1 GiB persistent queue, with the gateway's
// file_storage settings (compaction on start copies the whole bbolt file before the
// exporters start, and the health endpoint answers only after that).

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
)

// startupConfig: config/gateway.yaml's file_storage (compaction on start and on
// rebound, no fsync) and its exporter's persistent byte-sized queue, in front of a
// backend that is down, so the queue only grows.
const startupConfig = `
extensions:
  health_check: {endpoint: "${env:T_HEALTH}"}
  file_storage:
    directory: ${env:T_QUEUE}
    create_directory: true
    timeout: 2s
    fsync: false
    compaction:
      directory: ${env:T_QUEUE}
      on_start: true
      on_rebound: true
receivers:
  otlp:
    protocols:
      http: {endpoint: "${env:T_HTTP}", max_request_body_size: 8388608}
exporters:
  otlp_http/default:
    endpoint: http://${env:T_DEAD}
    sending_queue:
      storage: file_storage
      sizer: bytes
      queue_size: 1610612736 # 1.5 GiB: room above the 1 GiB this test writes
      num_consumers: 4
      batch: {sizer: items, min_size: 2000, max_size: 2000, flush_timeout: 1s}
    retry_on_failure: {enabled: true, initial_interval: 1s, max_interval: 30s, max_elapsed_time: 0s}
service:
  extensions: [health_check, file_storage]
  telemetry:
    metrics:
      level: normal
      readers:
        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: "${env:T_METRICS_PORT}"}}}
  pipelines:
    logs: {receivers: [otlp], exporters: [otlp_http/default]}
`

// startupQueueBytes is the queue the measurement starts on.
const startupQueueBytes = 1 << 30

// TestStartupOnFullQueue fills a persistent queue to ~1 GiB on disk, stops the
// collector the hard way (SIGKILL, as an OOM kill or a failed liveness probe
// would), starts it again on the same directory and reports the time until the
// health endpoint answers. That time must fit the gateway's startupProbe budget
// (failureThreshold x periodSeconds) with room to spare.
func TestStartupOnFullQueue(t *testing.T) {
	queueDir := t.TempDir()
	httpAddr, healthAddr, dead, metricsPort := e2e.FreeAddr(t), e2e.FreeAddr(t), e2e.FreeAddr(t), e2e.FreePort(t)
	env := []string{"T_QUEUE=" + queueDir, "T_HTTP=" + httpAddr, "T_HEALTH=" + healthAddr, "T_DEAD=" + dead,
		"T_METRICS_PORT=" + strconv.Itoa(metricsPort)}
	config := e2e.WriteConfig(t, startupConfig)

	c := e2e.Start(t, "", e2e.Options{Env: env, Args: []string{"--config", config}})
	fillStart := time.Now()
	fillQueue(t, "http://"+httpAddr, queueDir, startupQueueBytes)
	fill := time.Since(fillStart)
	queued := e2e.LogQueueBytes(fmt.Sprintf("127.0.0.1:%d", metricsPort))
	if err := c.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(30 * time.Second); err == nil {
		t.Log("collector exited")
	}
	onDisk := e2e.DirBytes(queueDir)

	start := time.Now()
	c2 := e2e.Start(t, "", e2e.Options{Env: env, Args: []string{"--config", config}, NoWait: true})
	budget := startupProbeBudget(t)
	e2e.WaitHTTP(t, "http://"+healthAddr+"/", http.StatusOK, budget)
	healthy := time.Since(start)
	after := e2e.LogQueueBytes(fmt.Sprintf("127.0.0.1:%d", metricsPort))

	t.Logf("queue: %.0f MiB queued (%.0f MiB in bbolt on disk), written in %s; after restart the queue holds %.0f MiB",
		queued/(1<<20), e2e.MiB(onDisk), fill.Round(time.Second), after/(1<<20))
	t.Logf("time to healthy on that queue: %s (startupProbe budget %s)", healthy.Round(100*time.Millisecond), budget)
	if after < queued*0.9 {
		t.Errorf("after the restart the queue holds %.0f MiB of the %.0f MiB written: data was lost", after/(1<<20), queued/(1<<20))
	}
	if healthy > budget/2 {
		t.Errorf("healthy after %s: the startupProbe budget %s leaves less than 2x headroom; raise its failureThreshold", healthy, budget)
	}
	_ = c2
}

// fillQueue sends 4 MiB log requests from four clients until the queue directory
// holds want bytes.
func fillQueue(t *testing.T, url, dir string, want int64) {
	t.Helper()
	ld := e2e.FluentBitLogs(4000, 0) // ~1 KB records, ~4 MiB a request
	body, ct, _, err := e2e.EncodeLogs(ld, e2e.Encoding{})
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
	ok := e2e.WaitFor(5*time.Minute, func() bool {
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

// startupProbeBudget is how long the gateway's startupProbe lets the container
// take to become healthy before the kubelet restarts it.
func startupProbeBudget(t *testing.T) time.Duration {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(e2e.RepoRoot(), "deploy", "base", "statefulset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var sts appsv1.StatefulSet
	mustUnmarshal(t, string(raw), &sts)
	p := sts.Spec.Template.Spec.Containers[0].StartupProbe
	if p == nil {
		t.Fatal("deploy/base/statefulset.yaml has no startupProbe")
	}
	return time.Duration(p.FailureThreshold*p.PeriodSeconds+p.InitialDelaySeconds) * time.Second
}
