package admissionextension

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

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

	slow := make(chan int)
	go func() {
		resp, err := http.Post(srv.URL+"/slow", "application/x-protobuf", strings.NewReader("payload"))
		if err != nil {
			slow <- 0
			return
		}
		resp.Body.Close()
		slow <- resp.StatusCode
	}()
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
