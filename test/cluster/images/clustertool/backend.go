// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// record is one log record as the backend got it: its body and the attributes of
// its resource and of itself, flattened to strings.
type record struct {
	Body     string            `json:"body"`
	Resource map[string]string `json:"resource"`
	Attrs    map[string]string `json:"attrs"`
}

// metricSeen is one metric name with the resource attributes it came with.
type metricSeen struct {
	Name      string            `json:"name"`
	Type      string            `json:"type"` // Gauge, Sum, Histogram, ...
	Monotonic bool              `json:"monotonic"`
	Resource  map[string]string `json:"resource"`
}

type store struct {
	mu      sync.Mutex
	logs    []record
	metrics map[string]metricSeen // name + pod: the last one
	reqs    int
	seqs    map[string][]uint16  // RUN -> times each number of "seq RUN n" arrived
	clients map[string]time.Time // client certificate serial -> last request with it
	down    atomic.Bool          // the elastic tests' outage: every connection is cut
	reject  atomic.Bool          // a backend refusing the data for good: 400 to every logs and metrics request
	refused atomic.Int64         // log records answered 400 while reject holds
}

// backend serves OTLP/HTTP on :4318, and OTLP/gRPC on :4317 as a second backend
// (numbers counted apart, an X-API-Key of $API_KEY required when set), both with
// mutual TLS (client certificates from $CA_FILE), and what it received as JSON on
// plain :8080 (/logs, /metrics, /seq, /clients), for the test to read from the node.
func backend() error {
	caPEM, err := os.ReadFile(envOr("CA_FILE", "/tls/ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("CA_FILE: no certificate in it")
	}
	cert, err := tls.LoadX509KeyPair(envOr("CERT_FILE", "/tls/tls.crt"), envOr("KEY_FILE", "/tls/tls.key"))
	if err != nil {
		return err
	}
	s := &store{metrics: map[string]metricSeen{}, seqs: map[string][]uint16{}, clients: map[string]time.Time{}}
	otlp := http.NewServeMux()
	otlp.HandleFunc("/v1/logs", s.outage(s.handleLogs))
	otlp.HandleFunc("/v1/metrics", s.rejecting(s.handleMetrics))
	otlp.HandleFunc("/v1/traces", func(_ http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) })
	srv := &http.Server{Addr: ":4318", Handler: otlp, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	}}
	status := http.NewServeMux()
	status.HandleFunc("/logs", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(s.logs)
	})
	status.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		out := make([]metricSeen, 0, len(s.metrics))
		for _, m := range s.metrics {
			out = append(out, m)
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	// Forget the metrics so far: the test then waits for ones sent after a change.
	status.HandleFunc("/metrics/reset", func(_ http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		clear(s.metrics)
	})
	status.HandleFunc("/seq", s.handleSeq)
	status.HandleFunc("/clients", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(s.clients)
	})
	status.HandleFunc("/down", func(_ http.ResponseWriter, r *http.Request) {
		s.down.Store(r.URL.Query().Get("on") == "true")
	})
	// /reject?on=true answers 400 to logs and metrics requests (a permanent error:
	// the sender drops them) and counts the log records; /reject answers that count.
	status.HandleFunc("/reject", func(w http.ResponseWriter, r *http.Request) {
		if on := r.URL.Query().Get("on"); on != "" {
			s.reject.Store(on == "true")
		}
		_ = json.NewEncoder(w).Encode(map[string]int64{"refused_log_records": s.refused.Load()})
	})
	go func() {
		_ = (&http.Server{Addr: ":8080", Handler: status, ReadHeaderTimeout: 10 * time.Second}).ListenAndServe()
	}()
	go func() {
		if err := s.serveGRPC(srv.TLSConfig); err != nil {
			fmt.Fprintln(os.Stderr, "backend: gRPC:", err)
		}
	}()
	fmt.Fprintln(os.Stderr, "backend: OTLP/HTTP on :4318 and OTLP/gRPC on :4317 with mutual TLS, status on :8080")
	return srv.ListenAndServeTLS("", "")
}

func body(r *http.Request) ([]byte, error) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		rd = zr
	}
	return io.ReadAll(rd)
}

// decode reads r's body into req; when it cannot, it answers 400 and says why.
func decode(w http.ResponseWriter, r *http.Request, req interface{ UnmarshalProto([]byte) error }) bool {
	b, err := body(r)
	if err == nil {
		err = req.UnmarshalProto(b)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func (s *store) handleLogs(w http.ResponseWriter, r *http.Request) {
	req := plogotlp.NewExportRequest()
	if !decode(w, r, req) {
		return
	}
	serial := ""
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		serial = r.TLS.PeerCertificates[0].SerialNumber.String()
	}
	s.storeLogs(req, "", serial)
	reply(w, plogotlp.NewExportResponse().MarshalProto)
}

// storeLogs keeps what one export request carried. Numbered records are counted
// under prefix+RUN (the gRPC endpoint is a second backend: "grpc:"), the others kept.
func (s *store) storeLogs(req plogotlp.ExportRequest, prefix, serial string) {
	var got []record
	var seq []string // "RUN n [pad]" of each numbered record
	rls := req.Logs().ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		res := flat(rls.At(i).Resource().Attributes().AsRaw())
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				if b := lr.Body().AsString(); strings.HasPrefix(b, "seq ") {
					seq = append(seq, b[len("seq "):])
					continue
				}
				got = append(got, record{Body: lr.Body().AsString(), Resource: res, Attrs: flat(lr.Attributes().AsRaw())})
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs = append(s.logs, got...)
	s.reqs++
	for _, rn := range seq {
		f := strings.SplitN(rn, " ", 3) // RUN n [pad]
		if len(f) < 2 {
			continue
		}
		run := prefix + f[0]
		n, err := strconv.Atoi(f[1])
		if err != nil || n <= 0 {
			continue
		}
		c := s.seqs[run]
		if n >= len(c) {
			c = append(c, make([]uint16, n+1-len(c)+len(c)/2)...)
		}
		c[n]++
		s.seqs[run] = c
	}
	if serial != "" {
		s.clients[serial] = time.Now()
	}
}

func (s *store) handleMetrics(w http.ResponseWriter, r *http.Request) {
	req := pmetricotlp.NewExportRequest()
	if !decode(w, r, req) {
		return
	}
	rms := req.Metrics().ResourceMetrics()
	s.mu.Lock()
	for i := 0; i < rms.Len(); i++ {
		res := flat(rms.At(i).Resource().Attributes().AsRaw())
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				seen := metricSeen{Name: m.Name(), Type: m.Type().String(), Resource: res}
				if m.Type() == pmetric.MetricTypeSum {
					seen.Monotonic = m.Sum().IsMonotonic()
				}
				s.metrics[m.Name()+"\x00"+res["k8s.pod.name"]+"\x00"+res["k8s.node.name"]] = seen
			}
		}
	}
	s.mu.Unlock()
	reply(w, pmetricotlp.NewExportResponse().MarshalProto)
}

// outage cuts the connection of every request while /down?on=true holds: to the
// relay the backend is unreachable, and what it was sending is not acknowledged.
func (s *store) outage(h http.HandlerFunc) http.HandlerFunc {
	return s.rejecting(func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h(w, r)
	})
}

// rejecting answers 400 while /reject?on=true holds (refuse), h otherwise.
func (s *store) rejecting(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.reject.Load() {
			s.refuse(w, r)
			return
		}
		h(w, r)
	}
}

// refuse answers a request 400, as a backend that finds it invalid does, after
// counting the records of a logs request.
func (s *store) refuse(w http.ResponseWriter, r *http.Request) {
	b, err := body(r)
	if err == nil && r.URL.Path == "/v1/logs" {
		req := plogotlp.NewExportRequest()
		if err = req.UnmarshalProto(b); err == nil {
			s.refused.Add(int64(req.Logs().LogRecordCount()))
		}
	}
	http.Error(w, "the cluster test's backend refuses these records", http.StatusBadRequest)
}

// seqCount is what arrived of "seq RUN n" for n in 1..upto.
type seqCount struct {
	Upto, Distinct, Missing, Duplicates, Beyond int
	FirstMissing                                []int
}

func (s *store) handleSeq(w http.ResponseWriter, r *http.Request) {
	upto, err := strconv.Atoi(r.URL.Query().Get("upto"))
	if err != nil || upto < 0 {
		http.Error(w, "upto: want a count", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	c := s.seqs[r.URL.Query().Get("run")]
	out := seqCount{Upto: upto}
	for n := 1; n < len(c); n++ {
		switch {
		case c[n] == 0:
		case n > upto:
			out.Beyond++
		default:
			out.Distinct++
			out.Duplicates += int(c[n]) - 1
		}
	}
	for n := 1; n <= upto; n++ {
		if n >= len(c) || c[n] == 0 {
			out.Missing++
			if len(out.FirstMissing) < 10 {
				out.FirstMissing = append(out.FirstMissing, n)
			}
		}
	}
	s.mu.Unlock()
	_ = json.NewEncoder(w).Encode(out)
}

func reply(w http.ResponseWriter, marshal func() ([]byte, error)) {
	out, err := marshal()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

func flat(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}
