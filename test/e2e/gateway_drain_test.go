// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// getFrom is GET url over a connection whose source address is src: the
// kubelet's preStop hook comes from the node, anything else from elsewhere.
func getFrom(t *testing.T, src, url string) (int, string) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s from %s: %v", url, src, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestGatewayDrainOnlyFromTheNodeAndResumes runs config/gateway.yaml with the
// node at 127.0.0.1 (MY_HOST_IP, status.hostIP in the StatefulSet): a GET /drain
// from 127.0.0.2 (another pod, or anyone who reaches the port) is refused and
// leaves intake on; one from the node drains, intake answers 503 and /ready 503;
// no SIGTERM follows, so after drain::resume_after intake takes logs again and
// /ready is 200.
func TestGatewayDrainOnlyFromTheNodeAndResumes(t *testing.T) {
	backend := e2e.NewBackendTLS(t, "default")
	sink := e2e.NewSink(t, otlpfixture.SinkOptions{TLS: backend.Server})
	gw := e2e.NewGateway(t, e2e.GatewayOptions{BackendURL: "https://" + sink.HTTPAddr, Backend: backend, Env: []string{
		"MY_HOST_IP=127.0.0.1",
		"RELAY_DRAIN_TIMEOUT=10s",
		// Long enough that the checks while draining are done well before it;
		// the pod would have had SIGTERM by then (terminationGracePeriodSeconds).
		"RELAY_DRAIN_RESUME_AFTER=30s",
	}})
	col := e2e.Start(t, "", e2e.Options{Env: gw.Env, Args: gw.Args, ReadyTimeout: 90 * time.Second})
	drainURL, readyURL := "http://"+gw.DrainAddr+"/drain", "http://"+gw.DrainAddr+"/ready"
	e2e.WaitHTTP(t, readyURL, http.StatusOK, 30*time.Second)
	client := e2e.NewHTTPClient(gw.HTTPURL, nil)
	send := func(first int64) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return client.SendLogs(ctx, otlpfixture.FluentBitLogs(5, first), otlpfixture.Encoding{})
	}
	if err := send(0); err != nil {
		t.Fatalf("before any drain: %v", err)
	}

	code, body := getFrom(t, "127.0.0.2", drainURL)
	if code != http.StatusForbidden {
		t.Fatalf("GET /drain from 127.0.0.2 (not the node): %d %q; want 403", code, body)
	}
	if code2, body2 := getFrom(t, "127.0.0.2", readyURL); code2 != http.StatusOK {
		t.Errorf("/ready after a refused drain: %d %q; want 200", code2, body2)
	}
	if err := send(5); err != nil {
		t.Errorf("intake after a refused drain: %v; want it untouched", err)
	}
	if err := col.WaitForOutput("127.0.0.2", 10*time.Second); err != nil {
		t.Errorf("no log line names the refused source 127.0.0.2: %v", err)
	}

	start := time.Now()
	code, body = getFrom(t, "127.0.0.1", drainURL)
	if code != http.StatusOK {
		t.Fatalf("GET /drain from the node: %d %q; want 200 (drained, the backend is up)", code, body)
	}
	err := send(10)
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("intake while drained: %v; want 503", err)
	}
	if code, _ := getFrom(t, "127.0.0.1", readyURL); code != http.StatusServiceUnavailable {
		t.Errorf("/ready while drained: %d; want 503", code)
	}

	// No SIGTERM came: the drain ends by itself.
	e2e.WaitHTTP(t, readyURL, http.StatusOK, 2*time.Minute)
	t.Logf("/ready 200 again %s after the drain started", time.Since(start).Round(time.Second))
	if time.Since(start) < 30*time.Second {
		t.Errorf("/ready 200 %s after the drain started, before drain::resume_after (30s)", time.Since(start))
	}
	if err := send(15); err != nil {
		t.Errorf("intake after drain::resume_after: %v; want 200", err)
	}
	if !otlpfixture.WaitFor(30*time.Second, func() bool { return sink.LogRecordCount() >= 15 }) {
		t.Errorf("backend has %d records, want the 15 acknowledged", sink.LogRecordCount())
	}
}
