// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
)

// loader is a numbered sender for the elastic tests: records "seq <RUN> <n>", n from 1
// up, in chunks of $BATCH, at a rate the test sets (PUT /rate?per_second=N), from
// $WORKERS connections that each post one chunk at a time, as fluent-bit's workers
// do, to the relay's Service with fluent-bit's client certificate. A chunk is
// retried whole until accepted (retry_limit no_limits); 400 and 413 drop it. Each
// connection is closed after $RECYCLE chunks (net.keepalive_max_recycle), so
// kube-proxy balances the redials over the replicas there are then. The record's
// attributes carry this pod's own identity, as fluent-bit's kubernetes filter would.
type loader struct {
	run     string
	prefix  string // the body is "<prefix> <run> <n> <pad>"; the backend counts "seq" ones
	pad     string // what makes a record as large as a container log line
	batch   int
	recycle int
	attrs   map[string]string

	next    atomic.Int64 // the last number handed to a chunk
	rate    atomic.Int64 // records per second; 0 pauses
	stopped atomic.Bool

	mu    sync.Mutex
	stats loadStats
}

type loadStats struct {
	Run      string
	Assigned int64 // numbers handed to chunks: 1..Assigned
	Acked    int64
	Requests int64
	Retries  int64
	Dropped  int64
	Pending  int64 // chunks assigned and not yet acknowledged or dropped
	Rate     int64
	Stopped  bool
}

func load() error {
	// A connection of its own per worker, as each fluent-bit output worker keeps its
	// own. With one pool for all, the idle connection returned last was taken first,
	// so the replica that answered fastest got more chunks than kube-proxy's choice
	// per connection gave it (one got 12% of four in TestScaleOutAndIn).
	newSenderFor := func() (*sender, error) {
		if u := os.Getenv("URL"); strings.HasPrefix(u, "http://") {
			// An application's plain OTLP/HTTP to the node agent.
			return &sender{url: u, client: &http.Client{Timeout: 30 * time.Second,
				Transport: &http.Transport{MaxIdleConnsPerHost: 1}}}, nil
		}
		return newSender()
	}
	l := &loader{
		run:     envOr("RUN", "1"),
		prefix:  envOr("PREFIX", "seq"),
		batch:   atoiOr("BATCH", 100),
		recycle: atoiOr("RECYCLE", 20),
		attrs:   map[string]string{"stream": "stdout"},
	}
	// PAD bytes of an access-log line after the number (the bench's fluent-bit
	// records are ~1.1 KB): sizing figures are per record of that size.
	if n := atoiOr("PAD", 0); n > 0 {
		line := `10.42.7.19 - - [02/Dec/2026:07:14:31 +0000] "GET /api/v1/orders?page=3&limit=50 HTTP/1.1" 200 5123 "-" "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36" rt=0.012 uct=0.001 uht=0.011 urt=0.011 upstream=10.42.3.7:8080 `
		l.pad = strings.Repeat(line, n/len(line)+1)[:n]
	}
	// IDENTITY=none: an application that names no pod, and is known by its connection.
	if os.Getenv("IDENTITY") != "none" {
		l.attrs["k8s.pod.name"] = os.Getenv("POD_NAME")
		l.attrs["k8s.namespace.name"] = os.Getenv("POD_NAMESPACE")
		l.attrs["k8s.pod.uid"] = os.Getenv("POD_UID")
		l.attrs["k8s.container.name"] = envOr("CONTAINER_NAME", "load")
	}
	l.rate.Store(int64(atoiOr("RATE", 0)))
	http.HandleFunc("/status", l.handleStatus)
	http.HandleFunc("/rate", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.URL.Query().Get("per_second"), 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "per_second: want a count >= 0", http.StatusBadRequest)
			return
		}
		l.rate.Store(n)
	})
	// Stop handing out numbers; the chunks in flight are still retried to the end.
	http.HandleFunc("/stop", func(_ http.ResponseWriter, _ *http.Request) { l.stopped.Store(true) })
	go func() {
		_ = (&http.Server{Addr: ":2020", ReadHeaderTimeout: 10 * time.Second}).ListenAndServe()
	}()

	chunks := make(chan int64) // first number of each chunk, paced by the rate
	go l.pace(chunks)
	workers := atoiOr("WORKERS", 4)
	for range workers {
		s, err := newSenderFor()
		if err != nil {
			return err
		}
		go l.work(chunks, s)
	}
	select {}
}

// pace hands out one chunk every batch/rate seconds, as the rate is now.
func (l *loader) pace(chunks chan<- int64) {
	for !l.stopped.Load() {
		r := l.rate.Load()
		if r <= 0 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		start := time.Now()
		first := l.next.Add(int64(l.batch)) - int64(l.batch) + 1
		l.mu.Lock()
		l.stats.Assigned = first + int64(l.batch) - 1
		l.stats.Pending++
		l.mu.Unlock()
		chunks <- first
		if d := time.Duration(float64(l.batch) / float64(r) * float64(time.Second)); time.Since(start) < d {
			time.Sleep(d - time.Since(start))
		}
	}
}

func (l *loader) work(chunks <-chan int64, s *sender) {
	sent := 0
	for first := range chunks {
		gz := l.chunk(first)
		for wait := 200 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
			sent++
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			status, err := s.postCtx(ctx, gz, sent%l.recycle == 0)
			cancel()
			l.mu.Lock()
			l.stats.Requests++
			done := true
			switch {
			case err == nil && status/100 == 2:
				l.stats.Acked += int64(l.batch)
			case err == nil && (status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge):
				l.stats.Dropped += int64(l.batch)
			default:
				l.stats.Retries++
				done = false
			}
			if done {
				l.stats.Pending--
			}
			l.mu.Unlock()
			if done {
				break
			}
			time.Sleep(wait)
		}
	}
}

// chunk is numbers first..first+batch-1 as one gzipped OTLP/HTTP request.
func (l *loader) chunk(first int64) []byte {
	logs := plog.NewLogs()
	lrs := logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	now := pcommon.NewTimestampFromTime(time.Now())
	for n := first; n < first+int64(l.batch); n++ {
		lr := lrs.AppendEmpty()
		lr.SetTimestamp(now)
		lr.SetObservedTimestamp(now)
		lr.Body().SetStr(strings.TrimSuffix(fmt.Sprintf("%s %s %d %s", l.prefix, l.run, n, l.pad), " "))
		for k, v := range l.attrs {
			lr.Attributes().PutStr(k, v)
		}
	}
	body, err := plogotlp.NewExportRequestFromLogs(logs).MarshalProto()
	if err != nil {
		panic(err) // a request built here always marshals
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(body)
	_ = zw.Close()
	return gz.Bytes()
}

func (l *loader) handleStatus(w http.ResponseWriter, _ *http.Request) {
	l.mu.Lock()
	st := l.stats
	l.mu.Unlock()
	st.Run, st.Rate, st.Stopped = l.run, l.rate.Load(), l.stopped.Load()
	_ = json.NewEncoder(w).Encode(st)
}

func atoiOr(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil && n > 0 {
		return n
	}
	return def
}
