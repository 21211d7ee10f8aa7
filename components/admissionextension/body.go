package admissionextension

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// boundBody puts a read deadline on the connection once the request holds a
// slot, so a sender that stalls mid-body (or whose node died mid-upload) frees
// the slot after body_read_timeout instead of when TCP gives up, minutes later.
//
// The receiver answers a failed body read with 400, which fluent-bit treats as
// final and drops the chunk; a slow but honest sender must be told to retry
// instead. So the answer to a request whose body read failed after the deadline
// is rewritten into 503 with Retry-After and Connection: close (the connection is
// unusable after a timed-out read anyway).
func (a *admission) boundBody(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	if a.cfg.BodyReadTimeout <= 0 || r.Body == nil || r.Body == http.NoBody {
		return w, r
	}
	rc := http.NewResponseController(w)
	deadline := time.Now().Add(a.cfg.BodyReadTimeout)
	if err := rc.SetReadDeadline(deadline); err != nil {
		// A writer that cannot set deadlines (not a net/http server
		// connection): nothing to bound.
		return w, r
	}
	body := &deadlineBody{ReadCloser: r.Body, rc: rc, deadline: deadline}
	r2 := *r
	r2.Body = body
	return &timeoutWriter{ResponseWriter: w, body: body, timeout: a.cfg.BodyReadTimeout}, &r2
}

type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	deadline time.Time
	timedOut atomic.Bool
	cleared  bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF && !b.cleared:
		// The whole body is in. net/http now reads the connection in the
		// background to notice a client going away, and a deadline passing
		// there would cancel the request's context while the pipeline
		// persists it: lift the deadline.
		b.cleared = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case err != nil && err != io.EOF && !time.Now().Before(b.deadline):
		// Checked by time rather than by error type: the timeout can arrive
		// wrapped by the decompressor or the body size limit.
		b.timedOut.Store(true)
	}
	return n, err
}

type timeoutWriter struct {
	http.ResponseWriter
	body     *deadlineBody
	timeout  time.Duration
	replaced bool
	wrote    bool
}

func (w *timeoutWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	if code >= 400 && w.body.timedOut.Load() {
		w.replaced = true
		h := w.ResponseWriter.Header()
		for k := range h {
			delete(h, k)
		}
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Connection", "close")
		h.Set("Retry-After", "1")
		w.ResponseWriter.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w.ResponseWriter, "otelcol-relay: the request body did not arrive within "+w.timeout.String()+" (admission body_read_timeout); retry\n")
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *timeoutWriter) Write(p []byte) (int, error) {
	if w.replaced {
		return len(p), nil // the receiver's 400 text; the 503 says why
	}
	if !w.wrote && w.body.timedOut.Load() {
		w.WriteHeader(http.StatusBadRequest) // implicit header: decide now
		if w.replaced {
			return len(p), nil
		}
	}
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *timeoutWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
