// SPDX-License-Identifier: Apache-2.0

package admissionextension

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// serveHTTP admits an HTTP request in two steps. It holds a body read
// (max_body_reads) from the start until it is answered, and its body must
// arrive within body_read_timeout; once the body is in, it also takes a slot
// (max_in_flight_requests) for decoding and processing. A slot is so never
// held by a sender that stalls mid-body, and the bodies held in memory,
// arriving, waiting for a slot or being decoded, are at most max_body_reads.
func (a *admission) serveHTTP(w http.ResponseWriter, r *http.Request, next http.Handler, retryAfter string) {
	if r.Body == nil || r.Body == http.NoBody {
		// Nothing to receive: the body has arrived.
		if !a.acquire(r.Context()) {
			w.Header().Set("Retry-After", retryAfter)
			http.Error(w, a.busyMessage(), http.StatusServiceUnavailable)
			return
		}
		defer a.release()
		next.ServeHTTP(w, r)
		return
	}
	if !a.take(r.Context(), a.reads) {
		w.Header().Set("Retry-After", retryAfter)
		http.Error(w, a.readsBusyMessage(), http.StatusServiceUnavailable)
		return
	}
	body := a.gateBody(w, r)
	defer body.finish()
	r2 := *r
	r2.Body = body
	next.ServeHTTP(&gateWriter{ResponseWriter: w, body: body, retryAfter: retryAfter}, &r2)
}

func (a *admission) retryAfter() string {
	return strconv.Itoa(max(1, int(a.cfg.MaxWait.Seconds())))
}

func (a *admission) readsBusyMessage() string {
	return fmt.Sprintf("otelcol-relay: all %d body reads stayed busy for %s (admission max_body_reads); retry later", cap(a.reads), a.cfg.MaxWait)
}

// Why a request's answer is replaced.
const (
	answered int32 = iota // the receiver's answer stands
	timedOut              // the body did not arrive within body_read_timeout
	noSlot                // the body arrived, but no slot was free within max_wait
)

var errNoSlot = errors.New("admission: no slot was free for the request within max_wait")

// gatedBody is the body the receiver reads. The read that reaches its end
// takes a slot, or fails when none is free within max_wait.
//
// The deadline is set on the connection (body_read_timeout) so that a sender
// that stalls mid-body, or whose node died mid-upload, frees its body read
// then instead of when TCP gives up, minutes later; it is lifted once the
// body is in, so that a slow pipeline is never cut.
type gatedBody struct {
	io.ReadCloser
	a        *admission
	ctx      context.Context
	rc       *http.ResponseController // nil: no deadline set
	deadline time.Time
	arrived  bool  // the end of the body has been read
	slot     bool  // holds a slot
	err      error // what every read returns once no slot was free
	why      atomic.Int32
}

// gateBody wraps r's body, holding the body read serveHTTP took.
func (a *admission) gateBody(w http.ResponseWriter, r *http.Request) *gatedBody {
	b := &gatedBody{ReadCloser: r.Body, a: a, ctx: r.Context()}
	if a.cfg.BodyReadTimeout > 0 {
		rc := http.NewResponseController(w)
		deadline := time.Now().Add(a.cfg.BodyReadTimeout)
		// A writer that cannot set deadlines (not a net/http server
		// connection) leaves nothing to bound.
		if rc.SetReadDeadline(deadline) == nil {
			b.rc, b.deadline = rc, deadline
		}
	}
	return b
}

func (b *gatedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF && !b.arrived:
		b.arrived = true
		// The whole body is in. net/http now reads the connection in the
		// background to notice a client going away, and a deadline passing
		// there would cancel the request's context while the pipeline
		// persists it: lift the deadline.
		if b.rc != nil {
			_ = b.rc.SetReadDeadline(time.Time{})
		}
		if !b.a.acquire(b.ctx) {
			b.why.Store(noSlot)
			b.err = errNoSlot
			return n, b.err
		}
		b.slot = true
	case err != nil && err != io.EOF && b.rc != nil && !time.Now().Before(b.deadline):
		// Checked by time rather than by error type: the timeout can arrive
		// wrapped by the decompressor or the body size limit.
		b.why.Store(timedOut)
	}
	return n, err
}

// finish gives back the body read and the slot, once the request is answered.
func (b *gatedBody) finish() {
	<-b.a.reads
	if b.slot {
		b.a.release()
	}
}

// gateWriter replaces the receiver's answer to a body read that failed here.
// The receiver answers a failed read with 400, which fluent-bit treats as final
// and drops the chunk; the sender must be told to retry instead: 503 with
// Retry-After, and Connection: close after a timed-out read (the connection is
// unusable then).
type gateWriter struct {
	http.ResponseWriter
	body       *gatedBody
	retryAfter string
	replaced   bool
	wrote      bool
}

func (w *gateWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	why := w.body.why.Load()
	if code < 400 || why == answered {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.replaced = true
	h := w.ResponseWriter.Header()
	for k := range h {
		delete(h, k)
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	msg := w.body.a.busyMessage()
	if why == timedOut {
		h.Set("Connection", "close")
		h.Set("Retry-After", "1")
		msg = "otelcol-relay: the request body did not arrive within " + w.body.a.cfg.BodyReadTimeout.String() + " (admission body_read_timeout); retry"
	} else {
		h.Set("Retry-After", w.retryAfter)
	}
	w.ResponseWriter.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w.ResponseWriter, msg+"\n")
}

func (w *gateWriter) Write(p []byte) (int, error) {
	if w.replaced {
		return len(p), nil // the receiver's 400 text; the 503 says why
	}
	if !w.wrote && w.body.why.Load() != answered {
		w.WriteHeader(http.StatusBadRequest) // implicit header: decide now
		if w.replaced {
			return len(p), nil
		}
	}
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *gateWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
