// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

// The measurement federation's startupProbe is sized from: how long
// config/federation.yaml takes to become healthy on a full persistent queue
// (file_storage compacts its bbolt file on start, a copy of everything queued,
// before the health endpoint answers).

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// federationQueueMiB is the shipped bound of federation's queue
// (OTEL_EXPORTER_DEFAULT_QUEUE_BYTES' default in federation.yaml, 2 GiB).
const federationQueueMiB = 2048

// federationStartupQueueMiB is the bound the test fills by default: 256 MiB keeps
// it short in `make test`; the start copies the queue, so the time is scaled to
// the shipped 2 GiB before the budget check. OTELCOL_RELAY_FEDERATION_STARTUP_QUEUE_MIB=2048
// measures the full figure the probe is sized from.
const federationStartupQueueMiB = 256

// TestFederationStartupOnFullQueue runs config/federation.yaml with the federation
// StatefulSet's environment (shard 0) and its backend down, fills its persistent
// queue until the queue refuses (full), kills it with SIGKILL (an OOM kill, a
// failed liveness probe), starts it again on the same directory and measures the
// time until the health endpoint answers. That time, scaled to the shipped bound,
// must fit federation's startupProbe budget; nothing queued may be lost.
//
// The queue is filled through the exporter federation scrapes into, by an OTLP
// receiver in a pipeline of its own merged in for the fill only: the start reads
// what the queue holds, not how it got there, and a scrape of hundreds of MiB
// would take a Prometheus the size of a cluster.
func TestFederationStartupOnFullQueue(t *testing.T) {
	queueMiB := queueMiBFromEnv(t, "OTELCOL_RELAY_FEDERATION_STARTUP_QUEUE_MIB", federationStartupQueueMiB, 4096)
	gw := backendDownGateway(t, append(shardEnv(t, manifest.FederationOverlay(t), 0),
		fmt.Sprintf("OTEL_EXPORTER_DEFAULT_QUEUE_BYTES=%d", int64(queueMiB)<<20))...)
	fillAddr := e2e.FreeAddr(t)
	fill := e2e.WriteConfig(t, fmt.Sprintf(`receivers:
  otlp/fill:
    protocols:
      http:
        endpoint: %s
service:
  pipelines:
    metrics/fill:
      receivers: [otlp/fill]
      exporters: [otlp_http/default]
`, fillAddr))
	federation := []string{"--config=" + gatewayConfig("federation.yaml")}

	budget := startupProbeBudget(t, "components", "federation", "statefulset.yaml")
	r := restartOnFilledQueue(t, gw, budget,
		e2e.Options{Env: gw.Env, Args: append(federation, "--config="+fill, "--feature-gates=confmap.enableMergeAppendOption"), ReadyTimeout: 90 * time.Second},
		e2e.Options{Env: gw.Env, Args: federation},
		func() { fillMetricsQueue(t, "http://"+fillAddr, gw.MetricsAddr) },
		func() float64 { return metricsQueueBytes(gw.MetricsAddr) })

	t.Logf("queue: full at %.0f MiB queued (bound %d MiB; %.0f MiB on disk), filled in %s; after the restart it holds %.0f MiB",
		r.queued/(1<<20), queueMiB, e2e.MiB(r.onDisk), r.filled.Round(time.Second), r.after/(1<<20))
	full := time.Duration(float64(r.healthy) * federationQueueMiB / float64(queueMiB))
	t.Logf("time to healthy on that queue: %s, %s scaled to the shipped %d MiB bound (startupProbe budget %s)",
		r.healthy.Round(100*time.Millisecond), full.Round(100*time.Millisecond), federationQueueMiB, budget)
	if r.queued < float64(int64(queueMiB)<<20)*0.9 {
		t.Errorf("the queue refused at %.0f MiB, below 90%% of its %d MiB bound", r.queued/(1<<20), queueMiB)
	}
	if full > budget {
		t.Errorf("healthy after %s on %d MiB, %s for the shipped %d MiB: over federation's startupProbe budget %s; raise its failureThreshold",
			r.healthy, queueMiB, full, federationQueueMiB, budget)
	}
}

// metricsQueueBytes is otelcol_exporter_queue_size for metrics (bytes, with
// federation's sizer), 0 before the queue reports one; -1 when the collector's
// metrics cannot be read.
func metricsQueueBytes(metricsAddr string) float64 {
	m, err := e2e.ScrapeSelfMetrics(metricsAddr)
	if err != nil {
		return -1
	}
	v, _ := m.Sum("otelcol_exporter_queue_size", map[string]string{"data_type": "metrics"})
	return v
}

// fillMetricsQueue sends ~4 MiB OTLP metrics requests (federated-looking gauge
// series) from four clients until the first refusal: the queue is full.
func fillMetricsQueue(t *testing.T, url, metricsAddr string) {
	t.Helper()
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "kube-state-metrics")
	rm.Resource().Attributes().PutStr("service.instance.id", "10.244.1.17:8080")
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("kube_pod_container_status_restarts_total")
	pts := m.SetEmptyGauge().DataPoints()
	now := time.Now()
	for i := range 25000 {
		dp := pts.AppendEmpty()
		dp.SetTimestamp(pcommon.NewTimestampFromTime(now))
		dp.SetDoubleValue(float64(i))
		dp.Attributes().PutStr("namespace", fmt.Sprintf("team-%03d", i%200))
		dp.Attributes().PutStr("pod", fmt.Sprintf("checkout-7d9f8c6b5-%05d", i))
		dp.Attributes().PutStr("container", "checkout")
		dp.Attributes().PutStr("uid", fmt.Sprintf("5f1c2a9e-0b7d-4c3a-9e21-%012d", i))
	}
	body, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	if err != nil {
		t.Fatal(err)
	}
	client := e2e.NewHTTPClient(url, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var once sync.Once
	var refusal string
	var wg sync.WaitGroup
	full := make(chan struct{})
	stop := func(r string) { once.Do(func() { refusal = r; close(full) }) }
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-full:
					return
				default:
				}
				code, resp, err := client.Post(ctx, "/v1/metrics", body, "application/x-protobuf", "")
				switch {
				case err != nil:
					stop("error: " + err.Error())
					return
				case code != http.StatusOK:
					stop(fmt.Sprintf("%d %s", code, resp))
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%.1f MiB a request; the first refusal: %.200s (queue %.0f MiB)", e2e.MiB(int64(len(body))), refusal, metricsQueueBytes(metricsAddr)/(1<<20))
	if ctx.Err() != nil {
		t.Fatal("the queue did not fill within 20 minutes")
	}
}
