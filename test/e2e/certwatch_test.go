// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/promtext"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// certwatchConfig relays logs from the gateway's OTLP/HTTP receiver
// (otlp_http_pooled) to one backend whose TLS material comes from certwatch.
// The exporter's own tls: block stays at its default (it is read once at
// start); https:// turns TLS on and certwatch's
// credentials replace the exporter's. The queue and unlimited retries hold what
// cannot be delivered while the backend's new CA is not trusted yet.
const certwatchConfig = `
extensions:
  certwatch/backend:
    ca_file: ${env:T_CERTS}/ca.crt
    cert_file: ${env:T_CERTS}/tls.crt
    key_file: ${env:T_CERTS}/tls.key
    poll_interval: 2s
receivers:
  otlp_http_pooled: {endpoint: "${env:T_HTTP}"}
exporters:
  %[1]s/backend:
    endpoint: https://${env:T_SINK}
    middlewares: [{id: certwatch/backend}]
    sending_queue: {enabled: true, queue_size: 1000000, sizer: items}
    retry_on_failure: {enabled: true, initial_interval: 100ms, max_interval: 1s, max_elapsed_time: 0}
service:
  extensions: [certwatch/backend]
` + e2e.SelfMetricsTelemetry + `  pipelines:
    logs: {receivers: [otlp_http_pooled], exporters: [%[1]s/backend]}
`

// certwatchTimeout bounds each wait: generous, the machine is small and shared.
const certwatchTimeout = 90 * time.Second

// TestCertwatchRotationUnderLoad runs the built binary against a backend that
// requires client certificates, under a continuous load of about 2,000 records/s,
// and goes through what an operator does to the mounted Secrets:
//  1. rotates the client certificate: the backend sees the new one;
//  2. rotates the backend to a new CA: delivery fails until the bundle with the
//     new CA is written, then resumes;
//  3. writes invalid material: it is rejected (the failure counter on the
//     metrics endpoint rises) and data keeps flowing on the old material;
//
// and then checks that every acknowledged record arrived exactly once, with the
// same collector process and no pipeline restart.
func TestCertwatchRotationUnderLoad(t *testing.T) {
	for _, exporter := range []string{"otlp_grpc", "otlp_http"} {
		t.Run(exporter, func(t *testing.T) { testCertwatch(t, exporter) })
	}
}

func testCertwatch(t *testing.T, exporter string) {
	certDir := filepath.Join(t.TempDir(), "exporter-certs")
	backendCA1 := testcerts.NewCA(t, "backend-ca-1")
	clientCA := testcerts.NewCA(t, "relay-client-ca")
	client1 := clientCA.Client(t, testcerts.Options{CommonName: "relay-1"})
	testcerts.AtomicWrite(t, certDir, client1.SecretFiles(backendCA1.CertPEM))

	// The backend ends each gRPC connection after a few seconds (gracefully,
	// with GOAWAY), as many real backends and load balancers do, so the relay
	// handshakes again regularly.
	sink := e2e.NewSink(t, otlpfixture.SinkOptions{
		TLS: testcerts.ServerTLS(t, backendCA1.Server(t, testcerts.Options{}), clientCA),
		GRPCServerOptions: []grpc.ServerOption{grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionAge: 2 * time.Second, MaxConnectionAgeGrace: 30 * time.Second,
		})},
	})
	sinkAddr := sink.GRPCAddr
	if exporter == "otlp_http" {
		sinkAddr = sink.HTTPAddr
	}
	httpAddr, metricsPort := e2e.FreeAddr(t), e2e.FreePort(t)
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	c := e2e.Start(t, fmt.Sprintf(certwatchConfig, exporter), e2e.Options{Env: []string{
		"T_CERTS=" + certDir, "T_HTTP=" + httpAddr, "T_SINK=" + sinkAddr,
		"T_METRICS_PORT=" + strconv.Itoa(metricsPort),
	}})
	pid := c.PID()

	load := startLoad(t, "http://"+httpAddr)
	defer load.stop()
	waitPeer(t, sink, 0, client1.Serial(), "first delivery with relay-1")

	// 1. Client certificate rotation.
	client2 := clientCA.Client(t, testcerts.Options{CommonName: "relay-2"})
	mark := len(sink.Requests())
	testcerts.AtomicWrite(t, certDir, client2.SecretFiles(backendCA1.CertPEM))
	waitPeer(t, sink, mark, client2.Serial(), "delivery with relay-2 after the client certificate rotation")

	// 2. CA rotation. The backend moves to a certificate from a new CA, and
	// (like a restarted server) closes its HTTP connections as it goes.
	backendCA2 := testcerts.NewCA(t, "backend-ca-2")
	sink.SetTLS(testcerts.ServerTLS(t, backendCA2.Server(t, testcerts.Options{}), clientCA))
	sink.SetHTTPKeepAlives(false)
	if err := c.WaitForOutput("certificate signed by unknown authority", certwatchTimeout); err != nil {
		t.Fatalf("the exporter never failed against the backend's new CA: %v", err)
	}
	before := sink.LogRecordCount()
	testcerts.AtomicWrite(t, certDir, client2.SecretFiles(testcerts.Bundle(backendCA1, backendCA2)))
	waitCond(t, "delivery resumes once the bundle trusts the new CA", func() bool {
		return sink.LogRecordCount() > before+2000
	})

	// 3. Invalid material mid-stream: a truncated certificate.
	if got := certwatchFailures(t, metricsURL); got != 0 {
		t.Fatalf("failure counter is %v before any invalid material", got)
	}
	testcerts.AtomicWrite(t, certDir, map[string][]byte{
		"ca.crt":  testcerts.Bundle(backendCA1, backendCA2),
		"tls.crt": client2.CertPEM[:len(client2.CertPEM)/2],
		"tls.key": client2.KeyPEM,
	})
	waitCond(t, "the failure counter on the metrics endpoint rises", func() bool {
		return certwatchFailures(t, metricsURL) >= 1
	})
	mark, before = len(sink.Requests()), sink.LogRecordCount()
	waitCond(t, "data keeps flowing on the last good material", func() bool {
		return sink.LogRecordCount() > before+2000
	})
	for _, r := range sink.Requests()[mark:] {
		if r.PeerCertSerial != client2.Serial() {
			t.Fatalf("after the invalid write a request presented %s (serial %s), want relay-2", r.PeerCertSubject, r.PeerCertSerial)
		}
	}

	// The expiry of the certificate in use is exported for alerting.
	m := certwatchMetrics(t, metricsURL)
	t.Logf("certwatch metrics:\n%s", m.Dump("otelcol_certwatch_"))
	notAfter, ok := m.Sum("otelcol_certwatch_certificate_not_after", map[string]string{"role": "client", "serial": client2.Serial()})
	if !ok || int64(notAfter) != client2.Cert.NotAfter.Unix() {
		t.Errorf("certificate_not_after for relay-2 is %v (found %v), want %d", notAfter, ok, client2.Cert.NotAfter.Unix())
	}
	if v, _ := m.Sum("otelcol_certwatch_reloads", map[string]string{"extension": "certwatch/backend", "result": "success"}); v != 2 {
		t.Errorf("reloads{result=success} = %v, want 2", v)
	}

	acked, rate := load.stop()
	if rate < 1000 {
		t.Errorf("load was %.0f records/s, want at least 1,000", rate)
	}
	waitCond(t, "every acknowledged record arrives", func() bool { return sink.LogRecordCount() >= len(acked) })
	// Anything late (a duplicate) would arrive within a retry interval.
	time.Sleep(2 * time.Second)
	report := sink.Loss(acked)
	t.Logf("%s: %s at %.0f records/s", exporter, report, rate)
	if report.Missing != 0 || report.Duplicated != 0 || report.Received != report.Acked {
		t.Errorf("not exactly once: %s", report)
	}

	if !c.Running() || c.PID() != pid {
		t.Errorf("collector process changed or exited (pid %d, was %d)", c.PID(), pid)
	}
	out := c.Output()
	if n := strings.Count(out, "Everything is ready"); n != 1 {
		t.Errorf("pipelines started %d times, want once", n)
	}
	if n := strings.Count(out, "Reloaded TLS material"); n != 2 {
		t.Errorf("logged %d reloads, want 2 (client certificate, CA bundle)", n)
	}
	for _, line := range strings.Split(string(client2.KeyPEM), "\n") {
		if len(line) > 16 && !strings.HasPrefix(line, "-----") && strings.Contains(out, line) {
			t.Fatal("the collector's output contains private key material")
		}
	}
}

// waitPeer waits until a request after the first `from` presented the client
// certificate with serial.
func waitPeer(t *testing.T, sink *otlpfixture.Sink, from int, serial, what string) {
	t.Helper()
	waitCond(t, what, func() bool {
		reqs := sink.Requests()
		for _, r := range reqs[min(from, len(reqs)):] {
			if r.PeerCertSerial == serial {
				return true
			}
		}
		return false
	})
}

func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(certwatchTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", certwatchTimeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// certwatchMetrics scrapes the collector's own metrics endpoint.
func certwatchMetrics(t *testing.T, url string) promtext.Families {
	t.Helper()
	m, err := promtext.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	return m
}

// certwatchFailures is the certwatch reload failure counter.
func certwatchFailures(t *testing.T, url string) float64 {
	t.Helper()
	v, ok := certwatchMetrics(t, url).Sum("otelcol_certwatch_reloads", map[string]string{"extension": "certwatch/backend", "result": "failure"})
	if !ok {
		t.Fatalf("%s has no otelcol_certwatch_reloads{result=\"failure\"} series", url)
	}
	return v
}

// loadGen sends fluent-bit-shaped records to the relay's OTLP/HTTP receiver,
// 100 per request every 50 ms, and remembers which were acknowledged. A
// refused request is sent again until accepted, as fluent-bit does.
type loadGen struct {
	once    sync.Once
	quit    chan struct{}
	done    chan struct{}
	acked   []int64
	started time.Time
	ended   time.Time
}

func startLoad(t *testing.T, url string) *loadGen {
	l := &loadGen{quit: make(chan struct{}), done: make(chan struct{}), started: time.Now()}
	client := e2e.NewHTTPClient(url, nil)
	go func() {
		defer close(l.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		var seq int64
		for {
			select {
			case <-l.quit:
				return
			case <-tick.C:
			}
			ld := otlpfixture.FluentBitLogs(100, seq)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := client.SendLogs(ctx, ld, otlpfixture.Encoding{})
				cancel()
				if err == nil {
					break
				}
				t.Logf("load: send of seq %d refused, retrying: %v", seq, err)
				select {
				case <-l.quit:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
			for i := int64(0); i < 100; i++ {
				l.acked = append(l.acked, seq+i)
			}
			seq += 100
		}
	}()
	return l
}

// stop ends the load and returns the acknowledged sequence numbers and the rate.
func (l *loadGen) stop() ([]int64, float64) {
	l.once.Do(func() {
		close(l.quit)
		<-l.done
		l.ended = time.Now()
	})
	return l.acked, float64(len(l.acked)) / l.ended.Sub(l.started).Seconds()
}

// TestCertwatchStartFailsOnMissingFiles: a relay whose exporter identity is
// missing must not start (and silently send nothing); it exits with an error
// naming the extension and the file.
func TestCertwatchStartFailsOnMissingFiles(t *testing.T) {
	certDir := filepath.Join(t.TempDir(), "exporter-certs")
	c := e2e.Start(t, fmt.Sprintf(certwatchConfig, "otlp_http"), e2e.Options{NoWait: true, Env: []string{
		"T_CERTS=" + certDir, "T_HTTP=" + e2e.FreeAddr(t), "T_SINK=127.0.0.1:9",
		"T_METRICS_PORT=" + strconv.Itoa(e2e.FreePort(t)),
	}})
	code, err := c.Wait(certwatchTimeout)
	if err != nil {
		t.Fatal(err)
	}
	out := c.Output()
	if code == 0 {
		t.Fatalf("collector exited 0 without its TLS material:\n%s", out)
	}
	for _, want := range []string{"certwatch/backend", filepath.Join(certDir, "ca.crt"), "no such file or directory"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
}
