package main

import (
	"compress/gzip"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// sink is a lean OTLP/HTTP backend for the benchmark: it decodes every request
// with pdata (as a real backend would) but keeps only, per sequence number, how
// often and when it first arrived, so millions of records fit in a few MiB.
type sink struct {
	URL      string
	srv      *http.Server
	refuse   atomic.Bool
	received atomic.Int64

	mu      sync.Mutex
	count   []uint8
	arrival []int64 // unix nanos of the first arrival
}

func newSink(t *runTB, cfg *tls.Config, maxSeq int64) *sink {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{URL: "https://" + l.Addr().String(), count: make([]uint8, maxSeq), arrival: make([]int64, maxSeq)}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(tls.NewListener(l, cfg)) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

func (s *sink) handle(w http.ResponseWriter, r *http.Request) {
	if s.refuse.Load() {
		http.Error(w, "backend outage", http.StatusServiceUnavailable)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := plogotlp.NewExportRequest()
	if err := req.UnmarshalProto(raw); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	now := time.Now().UnixNano()
	n := 0
	s.mu.Lock()
	rls := req.Logs().ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				n++
				s.note(lrs.At(k), now)
			}
		}
	}
	s.mu.Unlock()
	s.received.Add(int64(n))
	w.Header().Set("Content-Type", "application/x-protobuf")
	resp, _ := plogotlp.NewExportResponse().MarshalProto()
	_, _ = w.Write(resp)
}

func (s *sink) note(lr plog.LogRecord, now int64) {
	v, ok := lr.Attributes().Get(e2e.SeqAttr)
	if !ok {
		return
	}
	seq := v.Int()
	if seq < 0 || seq >= int64(len(s.count)) {
		return
	}
	if s.count[seq] == 0 {
		s.arrival[seq] = now
	}
	if s.count[seq] < 255 {
		s.count[seq]++
	}
}

// loss counts missing and duplicated records among the acknowledged ones.
func (s *sink) loss(acked []int64) (missing, duplicated int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seq := range acked {
		switch c := s.count[seq]; {
		case c == 0:
			missing++
		case c > 1:
			duplicated += int(c) - 1
		}
	}
	return missing, duplicated
}

func (s *sink) firstArrival(seq int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrival[seq]
}
