// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// Chunk is one pre-encoded OTLP/HTTP export request (gzip protobuf) holding the
// records First..First+N-1, like one fluent-bit chunk.
type Chunk struct {
	First int64
	N     int
	Body  []byte
}

// EncodeChunks pre-encodes count chunks of perChunk FluentBitLogs records starting
// at seq first, gzip-compressed, using every CPU. Encoding ahead keeps the sender
// cheap while it runs (no per-record work on the hot path).
func EncodeChunks(first int64, count, perChunk int) []Chunk {
	return EncodeChunksWith(first, count, perChunk, nil)
}

// EncodeChunksWith is EncodeChunks with each chunk's records changed by edit
// (when not nil) before they are encoded.
func EncodeChunksWith(first int64, count, perChunk int, edit func(c Chunk, ld plog.Logs)) []Chunk {
	chunks := make([]Chunk, count)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= count {
					return
				}
				c := Chunk{First: first + int64(i*perChunk), N: perChunk}
				ld := otlpfixture.FluentBitLogs(perChunk, c.First)
				if edit != nil {
					edit(c, ld)
				}
				body, _, _, err := otlpfixture.EncodeLogs(ld, otlpfixture.Encoding{Gzip: true})
				if err != nil {
					panic(err) // encoding our own pdata cannot fail
				}
				c.Body = body
				chunks[i] = c
			}
		}()
	}
	wg.Wait()
	return chunks
}

// SenderOptions configures a Sender.
type SenderOptions struct {
	// URL is the full export URL, e.g. https://127.0.0.1:4318/v1/logs.
	URL string
	TLS *tls.Config
	// Workers is the number of concurrent connections (fluent-bit's workers); 4
	// when zero.
	Workers int
	// Rate caps the offered load in records per second; 0 sends as fast as the
	// receiver answers.
	Rate float64
	// RetryMin and RetryMax bound the back-off between attempts of one chunk;
	// 100 ms and 2 s when zero.
	RetryMin, RetryMax time.Duration
}

// ChunkResult is the fate of one chunk.
type ChunkResult struct {
	Chunk    Chunk
	Start    time.Time // first attempt
	Acked    time.Time // zero unless the receiver answered 200
	Status   int       // last HTTP status; 0 for a transport error
	Attempts int
}

// Sender sends chunks the way fluent-bit's opentelemetry output does: HTTP
// statuses 200-205 are success, 429/502/503/504 and transport errors are retried
// with back-off (fluent-bit's filesystem buffer keeps the chunk meanwhile), and any
// other status drops the chunk.
type Sender struct {
	opts   SenderOptions
	client *http.Client

	queue   chan Chunk
	wg      sync.WaitGroup
	start   time.Time
	issued  atomic.Int64 // records handed to a worker, for pacing
	giveUp  chan struct{}
	stopped sync.Once

	mu       sync.Mutex
	results  []ChunkResult
	statuses map[int]int // per attempt; 0 = transport error
	inFlight int
}

// NewSender returns a sender; nothing is sent before Send.
func NewSender(opts SenderOptions) *Sender {
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	if opts.RetryMin == 0 {
		opts.RetryMin = 100 * time.Millisecond
	}
	if opts.RetryMax == 0 {
		opts.RetryMax = 2 * time.Second
	}
	tr := &http.Transport{
		TLSClientConfig:     opts.TLS.Clone(), // not shared with an h2 transport (NewHTTPClient)
		MaxIdleConnsPerHost: opts.Workers,
		IdleConnTimeout:     90 * time.Second,
		// fluent-bit speaks HTTP/1.1: one connection per worker.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	return &Sender{
		opts:     opts,
		client:   &http.Client{Transport: tr, Timeout: 30 * time.Second},
		queue:    make(chan Chunk),
		giveUp:   make(chan struct{}),
		statuses: map[int]int{},
	}
}

// Send starts the workers on chunks and returns at once. Close stops feeding new
// chunks; Wait waits for the chunks already taken to be acknowledged or dropped.
func (s *Sender) Send(ctx context.Context, chunks []Chunk) {
	s.start = time.Now()
	for w := 0; w < s.opts.Workers; w++ {
		s.wg.Add(1)
		go s.worker()
	}
	go func() {
		defer close(s.queue)
		for _, c := range chunks {
			if !s.pace(ctx, c.N) {
				return
			}
			select {
			case s.queue <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
}

// pace sleeps until the next n records may be offered at the configured rate.
func (s *Sender) pace(ctx context.Context, n int) bool {
	if s.opts.Rate <= 0 {
		return ctx.Err() == nil
	}
	due := s.start.Add(time.Duration(float64(s.issued.Add(int64(n))-int64(n)) / s.opts.Rate * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return false
		}
	}
	return ctx.Err() == nil
}

func (s *Sender) worker() {
	defer s.wg.Done()
	for c := range s.queue {
		s.mu.Lock()
		s.inFlight++
		s.mu.Unlock()
		r := s.deliver(c)
		s.mu.Lock()
		s.inFlight--
		s.results = append(s.results, r)
		s.mu.Unlock()
	}
}

func (s *Sender) deliver(c Chunk) ChunkResult {
	r := ChunkResult{Chunk: c, Start: time.Now()}
	backoff := s.opts.RetryMin
	for {
		r.Attempts++
		r.Status = s.post(c.Body)
		s.mu.Lock()
		s.statuses[r.Status]++
		s.mu.Unlock()
		switch {
		case r.Status >= 200 && r.Status <= 205:
			r.Acked = time.Now()
			return r
		case !Retryable(r.Status):
			return r
		}
		jitter := time.Duration(rand.Int64N(int64(backoff)/2 + 1))
		select {
		case <-time.After(backoff/2 + jitter):
		case <-s.giveUp:
			return r
		}
		backoff = min(2*backoff, s.opts.RetryMax)
	}
}

// Retryable reports whether fluent-bit retries a chunk answered with status (0 is
// a transport error: connection refused or reset).
func Retryable(status int) bool {
	switch status {
	case 0, http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

func (s *Sender) post(body []byte) int {
	req, err := http.NewRequest(http.MethodPost, s.opts.URL, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := s.client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Wait waits until every chunk taken so far has been acknowledged or dropped, or
// gives up retrying after timeout (what is still being retried then counts as not
// acknowledged). It reports whether everything settled in time.
func (s *Sender) Wait(timeout time.Duration) bool {
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		s.GiveUp()
		<-done
		return false
	}
}

// GiveUp ends every retry now: chunks still unacknowledged stay so, as when
// Wait's timeout passes. For a caller that knows the receiver is gone.
func (s *Sender) GiveUp() { s.stopped.Do(func() { close(s.giveUp) }) }

// Results returns the fate of every finished chunk.
func (s *Sender) Results() []ChunkResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ChunkResult(nil), s.results...)
}

// Acked returns the sequence numbers of every acknowledged record, sorted.
func (s *Sender) Acked() []int64 {
	var seqs []int64
	for _, r := range s.Results() {
		if r.Acked.IsZero() {
			continue
		}
		for i := 0; i < r.Chunk.N; i++ {
			seqs = append(seqs, r.Chunk.First+int64(i))
		}
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs
}

// SenderStats summarises a run.
type SenderStats struct {
	AckedRecords, DroppedRecords int
	// Statuses counts attempts by HTTP status (0 = transport error).
	Statuses map[int]int
	Retries  int
}

// Stats summarises the results so far.
func (s *Sender) Stats() SenderStats {
	st := SenderStats{Statuses: map[int]int{}}
	s.mu.Lock()
	for k, v := range s.statuses {
		st.Statuses[k] = v
	}
	s.mu.Unlock()
	for _, r := range s.Results() {
		st.Retries += r.Attempts - 1
		if r.Acked.IsZero() {
			st.DroppedRecords += r.Chunk.N
		} else {
			st.AckedRecords += r.Chunk.N
		}
	}
	return st
}

// AckedRecords is the number of records acknowledged so far.
func (s *Sender) AckedRecords() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.results {
		if !r.Acked.IsZero() {
			n += r.Chunk.N
		}
	}
	return n
}
