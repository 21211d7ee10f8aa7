// SPDX-License-Identifier: Apache-2.0

package admissionextension

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// stalledUpload opens a connection, sends the headers of a 1 MB request and 64
// KiB of its body, and stops sending: a sender whose node died mid-upload. It
// returns the connection, still open.
func stalledUpload(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /v1/logs HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-protobuf\r\nContent-Length: %d\r\n\r\n", addr, 1<<20)
	if _, err := c.Write(make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	return c
}

// The bound on body reads holds: with max_body_reads uploads stalled mid-body, a
// live sender is refused (retryable, naming the setting) until body_read_timeout
// cuts them; then it gets through, and each stalled upload is answered with a
// retryable 503 that names the deadline.
func TestStalledBodiesAreCut(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxInFlightRequests, cfg.MaxBodyReads = 2, 4
	cfg.MaxWait, cfg.BodyReadTimeout = 100*time.Millisecond, 500*time.Millisecond
	a := newTestAdmissionCfg(t, cfg)
	srv := httptest.NewServer(wrapOK(t, a))
	t.Cleanup(srv.Close) // after the stalled connections close, or it waits for them
	addr := strings.TrimPrefix(srv.URL, "http://")

	var stalled []net.Conn
	for range cfg.MaxBodyReads {
		stalled = append(stalled, stalledUpload(t, addr))
	}
	waitFor(t, func() bool { return len(a.reads) == cfg.MaxBodyReads })
	if len(a.slots) != 0 {
		t.Fatalf("%d slots held by uploads whose bodies have not arrived", len(a.slots))
	}

	start := time.Now()
	var code int
	refusedForReads := false
	for time.Since(start) < 10*time.Second {
		resp, body := postRead(t, srv.URL)
		if code = resp.StatusCode; code == http.StatusOK {
			break
		}
		if code == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" && strings.Contains(body, "max_body_reads") {
			refusedForReads = true
		}
	}
	if code != http.StatusOK {
		t.Fatalf("a live sender still refused (%d) %s after the uploads stalled; body_read_timeout %s", code, time.Since(start), cfg.BodyReadTimeout)
	}
	if !refusedForReads {
		t.Fatal("with every body read held by a stalled upload, a live sender was never refused naming max_body_reads")
	}

	for i, c := range stalled {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("stalled upload %d: no answer: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "body_read_timeout") {
			t.Fatalf("stalled upload %d: %d %q (Retry-After %q); want a retryable 503 naming body_read_timeout", i, resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
	}
	waitFor(t, func() bool { return len(a.reads) == 0 && len(a.slots) == 0 })
}

// An honest upload that takes a while, within the bound, is not cut, and the
// deadline does not outlive the body (the handler may take longer than it).
func TestSlowHandlerAfterBodyIsNotCut(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.BodyReadTimeout = 200 * time.Millisecond
	a := newTestAdmissionCfg(t, cfg)
	srv := httptest.NewServer(wrap(t, a, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(600 * time.Millisecond): // persisting takes a while
		case <-r.Context().Done():
			http.Error(w, "request context canceled", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	})))
	defer srv.Close()
	for range 2 { // the second one reuses the connection
		if code := post(t, srv.URL).StatusCode; code != http.StatusOK {
			t.Fatalf("slow handler after a complete body: %d", code)
		}
	}
}

func TestConnectionClosedOnceOlderThanMaxAge(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxConnectionAge = 300 * time.Millisecond
	a := newTestAdmissionCfg(t, cfg)
	srv := httptest.NewServer(wrapOK(t, a))
	defer srv.Close()
	client := srv.Client()
	closed, start := 0, time.Now()
	for time.Since(start) < 1500*time.Millisecond {
		resp, err := client.Post(srv.URL, "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			closed++
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A keep-alive client would use one connection throughout; with a 300ms
	// age it gets at most one recycle per 300ms, and at least one in 1.5s.
	if most := int(time.Since(start)/cfg.MaxConnectionAge) + 1; closed < 1 || closed > most {
		t.Fatalf("%d answers carried Connection: close in %s with max_connection_age 300ms; want 1-%d", closed, time.Since(start).Round(time.Millisecond), most)
	}
	waitFor(t, func() bool { return a.ages.len() <= 1 })
}

func TestConnAgesForgetsIdleConnections(t *testing.T) {
	c := newConnAges(time.Minute)
	t0 := time.Unix(0, 0)
	for i := range 100 {
		c.expired(fmt.Sprintf("10.0.0.1:%d", 1000+i), t0)
	}
	if c.expired("10.0.0.1:1000", t0.Add(30*time.Second)) {
		t.Fatal("a 30s old connection expired with max age 1m")
	}
	if !c.expired("10.0.0.1:1000", t0.Add(61*time.Second)) {
		t.Fatal("a 61s old connection did not expire with max age 1m")
	}
	c.expired("10.0.0.2:1", t0.Add(2*time.Minute)) // sweeps the idle ones
	if n := c.len(); n != 1 {
		t.Fatalf("%d connections remembered after the idle ones were swept; want 1", n)
	}
}

// unanswered reports whether nothing has come back on c yet: the server has
// neither answered nor closed the connection.
func unanswered(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// With more stalled uploads than slots open, an honest sender is answered 200
// within max_wait: a slot is taken once the body has arrived, so uploads that
// stall mid-body hold only a body read. The timeouts are far apart (a minute
// against two seconds), and the stalled uploads are still unanswered when the
// honest request is done: it did not wait for body_read_timeout.
func TestStalledUploadsDoNotDelayHonestSenders(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxInFlightRequests, cfg.MaxWait, cfg.BodyReadTimeout = 2, 2*time.Second, time.Minute
	a := newTestAdmissionCfg(t, cfg)
	srv := httptest.NewServer(wrapOK(t, a))
	t.Cleanup(srv.Close) // after the stalled connections close, or it waits for them
	addr := strings.TrimPrefix(srv.URL, "http://")

	stalled := cfg.MaxInFlightRequests + 1 // below the bound on body reads (twice the slots by default)
	var conns []net.Conn
	for range stalled {
		conns = append(conns, stalledUpload(t, addr))
	}
	waitFor(t, func() bool { return a.active.Load() == int64(stalled) })

	if code := post(t, srv.URL).StatusCode; code != http.StatusOK {
		t.Fatalf("an honest sender got %d with %d uploads stalled mid-body and %d slots; want 200", code, stalled, cfg.MaxInFlightRequests)
	}
	for i, c := range conns {
		if !unanswered(c) {
			t.Fatalf("stalled upload %d was answered before body_read_timeout (%s)", i, cfg.BodyReadTimeout)
		}
	}
}

// A request whose body has arrived but finds every slot busy for max_wait is
// refused with a retryable 503 naming the setting, not with the receiver's 400
// for a failed read; the slot holder is answered as usual.
func TestBodyThatFindsNoSlotIsRetryable(t *testing.T) {
	a := newTestAdmission(t, 1, 50*time.Millisecond)
	entered, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(wrap(t, a, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/slow" {
			close(entered)
			<-release // the pipeline is still persisting the request
		}
		w.WriteHeader(http.StatusOK)
	})))
	defer srv.Close()

	slow := postAsync(srv.URL+"/slow", strings.NewReader("payload"))
	<-entered
	resp, body := postRead(t, srv.URL+"/v1/logs")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, "max_in_flight_requests") {
		t.Fatalf("a complete body with the only slot busy: %d %q (Retry-After %q); want 503 naming max_in_flight_requests, Retry-After 1", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if resp.Close {
		t.Fatal("the refusal closed a connection whose body was read whole")
	}
	close(release)
	if code := <-slow; code != http.StatusOK {
		t.Fatalf("the request holding the slot got %d", code)
	}
	if code := post(t, srv.URL+"/v1/logs").StatusCode; code != http.StatusOK {
		t.Fatalf("after the slot was released: %d", code)
	}
	waitFor(t, func() bool { return len(a.reads) == 0 && len(a.slots) == 0 })
}
