// SPDX-License-Identifier: Apache-2.0

package admissionextension

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/extension/extensiontest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcol-relay/otelcol-relay/components/admissionextension/internal/metadata"
)

func newTestAdmission(t *testing.T, slots int, wait time.Duration) *admission {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.MaxInFlightRequests, cfg.MaxWait = slots, wait
	return newTestAdmissionCfg(t, cfg)
}

func newTestAdmissionCfg(t *testing.T, cfg *Config) *admission {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := newAdmission(extensiontest.NewNopSettings(metadata.Type), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// wrap puts the admission middleware in front of h, as the receiver does.
func wrap(t *testing.T, a *admission, h http.Handler) http.Handler {
	t.Helper()
	w, err := a.GetHTTPHandler(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out, err := w(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wrapOK is the middleware in front of a handler that reads the body the way
// the OTLP receiver does (a failed read is a 400) and answers 200.
func wrapOK(t *testing.T, a *admission) http.Handler {
	return wrap(t, a, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
}

// post sends a small body to url and returns the answer with its body read.
func post(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, _ := postRead(t, url)
	return resp
}

// postAsync posts body (nil: none) to url and sends the answer's status, or 0
// when there is none.
func postAsync(url string, body io.Reader) <-chan int {
	code := make(chan int, 1)
	go func() {
		resp, err := http.Post(url, "application/x-protobuf", body)
		if err != nil {
			code <- 0
			return
		}
		resp.Body.Close()
		code <- resp.StatusCode
	}()
	return code
}

// postRead is post, also returning the answer's body.
func postRead(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/x-protobuf", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

func TestHTTPRefusesWhenEverySlotStaysBusy(t *testing.T) {
	a := newTestAdmission(t, 1, 50*time.Millisecond)
	wrap, err := a.GetHTTPHandler(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	h, err := wrap(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	slow := postAsync(srv.URL+"/slow", nil)
	<-entered

	resp, err := http.Post(srv.URL+"/v1/logs", "application/x-protobuf", nil)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 512)
	n, _ := resp.Body.Read(body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("with the only slot busy: %d, Retry-After %q; want 503 with Retry-After 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if !strings.Contains(string(body[:n]), "max_in_flight_requests") {
		t.Fatalf("refusal %q does not name the setting", body[:n])
	}

	close(release)
	if code := <-slow; code != http.StatusOK {
		t.Fatalf("the request holding the slot got %d", code)
	}
	// The slot is free again.
	resp, err = http.Post(srv.URL+"/v1/logs", "application/x-protobuf", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after the slot was released: %d", resp.StatusCode)
	}
}

func TestHTTPWaitsForASlot(t *testing.T) {
	a := newTestAdmission(t, 1, 5*time.Second)
	a.slots <- struct{}{} // someone holds the slot
	go func() {
		time.Sleep(100 * time.Millisecond)
		a.release()
	}()
	if !a.acquire(context.Background()) {
		t.Fatal("a slot freed within max_wait must be taken, not refused")
	}
}

func TestGRPCRefusesWithUnavailable(t *testing.T) {
	a := newTestAdmission(t, 1, 20*time.Millisecond)
	opts, err := a.GetGRPCServerOptions(context.Background())
	if err != nil || len(opts) != 1 {
		t.Fatalf("options %v, %v", opts, err)
	}
	a.slots <- struct{}{}
	called := false
	_, err = a.unary(context.Background(), nil, nil, func(context.Context, any) (any, error) { called = true; return nil, nil })
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "max_in_flight_requests") || called {
		t.Fatalf("with the only slot busy: %v (handler called: %v); want UNAVAILABLE naming the setting", err, called)
	}
	a.release()
	if _, err = a.unary(context.Background(), nil, nil, func(context.Context, any) (any, error) { called = true; return nil, nil }); err != nil || !called {
		t.Fatalf("with a free slot: %v (handler called: %v)", err, called)
	}
	if len(a.slots) != 0 {
		t.Fatal("the slot was not released after the call")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxInFlightRequests: 0, MaxWait: time.Second}, "max_in_flight_requests 0: must be at least 1"},
		{Config{MaxInFlightRequests: 1, MaxWait: -time.Second}, "max_wait -1s: must not be negative"},
		{Config{MaxInFlightRequests: 1, BodyReadTimeout: -time.Second}, "body_read_timeout -1s: must not be negative"},
		{Config{MaxInFlightRequests: 1, MaxConnectionAge: -time.Second}, "max_connection_age -1s: must not be negative"},
		{Config{MaxInFlightRequests: 1, Drain: DrainConfig{Endpoint: "13134", Timeout: time.Second, PollInterval: time.Second}}, `drain::endpoint "13134": want host:port`},
		{Config{MaxInFlightRequests: 1, Drain: DrainConfig{Timeout: 0, PollInterval: time.Second}}, "drain::timeout 0s: must be positive"},
		{Config{MaxInFlightRequests: 1, Drain: DrainConfig{Timeout: time.Second, PollInterval: time.Second, MetricsURL: "localhost:8888"}}, `drain::metrics_url "localhost:8888": want an http(s) URL`},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if err := createDefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
}
