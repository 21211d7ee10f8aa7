// SPDX-License-Identifier: Apache-2.0

// Package otlpfixture holds the OTLP test fixtures that unit tests and the
// end-to-end harness share: fluent-bit shaped log records and an OTLP sink
// (gRPC and HTTP) that counts what arrived. It stays light (pdata and gRPC, no
// Kubernetes or Prometheus clients) so a component's unit tests can use it.
package otlpfixture

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	_ "google.golang.org/grpc/encoding/gzip" // exporters compress with gzip by default; a real backend accepts it
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// SeqAttr is the log record attribute that carries a sender's sequence number, so
// a sink can count exactly what arrived, what is missing and what is duplicated.
const SeqAttr = "seq"

// Request describes one export request the sink accepted.
type Request struct {
	Protocol string // "grpc" or "http"
	Signal   string // "logs" or "metrics"
	Header   http.Header
	// PeerCertSubject is the common name of the client certificate the caller
	// presented, or "" without mutual TLS.
	PeerCertSubject string
	PeerCertSerial  string
	Items           int
}

// SinkOptions configures a Sink.
type SinkOptions struct {
	// TLS makes both listeners serve TLS; set ClientAuth to require client
	// certificates.
	TLS *tls.Config
	// GRPCServerOptions are added to the gRPC server's options, e.g.
	// keepalive.ServerParameters{MaxConnectionAge: ...} so that clients
	// reconnect (and handshake again) regularly, as behind many real backends.
	GRPCServerOptions []grpc.ServerOption
	// MaxSeq, when set, makes the sink keep only how often and when each
	// sequence number below MaxSeq first arrived, not the records themselves,
	// so that millions of records fit in a few MiB (the benchmark's scale).
	// Logs() then returns nothing.
	MaxSeq int64
	// Decoders decode HTTP bodies by Content-Encoding, beyond gzip (zstd in
	// the end-to-end harness, which keeps that dependency out of unit tests).
	Decoders map[string]func(io.Reader) (io.ReadCloser, error)
}

// Sink is an OTLP server (gRPC and HTTP) that keeps everything it is sent. It is
// built on the collector's own pdata OTLP packages, so it decodes exactly what a
// real backend would.
type Sink struct {
	GRPCAddr string
	HTTPAddr string

	grpcSrv *grpc.Server
	httpSrv *http.Server

	mu       sync.Mutex
	logs     []plog.Logs
	metrics  []pmetric.Metrics
	requests []Request
	nLogs    int
	nPoints  int
	// refuse, when set, is returned for every request (a backend outage).
	refuse   error
	decoders map[string]func(io.Reader) (io.ReadCloser, error)
	// seqCount and seqFirst (unix nanos) are kept instead of logs with MaxSeq.
	seqCount []uint8
	seqFirst []int64
	tlsMu    sync.RWMutex
	tls      *tls.Config
}

// NewSink starts a sink on two free loopback ports. It is closed when the test ends.
func NewSink(t tb.T, opts SinkOptions) *Sink {
	t.Helper()
	s := &Sink{tls: opts.TLS, decoders: opts.Decoders}
	if opts.MaxSeq > 0 {
		s.seqCount, s.seqFirst = make([]uint8, opts.MaxSeq), make([]int64, opts.MaxSeq)
	}

	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.GRPCAddr, s.HTTPAddr = gl.Addr().String(), hl.Addr().String()

	var gopts []grpc.ServerOption
	if opts.TLS != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(s.serverTLS())))
		hl = tls.NewListener(hl, s.serverTLS())
	}
	gopts = append(gopts, opts.GRPCServerOptions...)
	s.grpcSrv = grpc.NewServer(gopts...)
	plogotlp.RegisterGRPCServer(s.grpcSrv, &grpcLogs{s: s})
	pmetricotlp.RegisterGRPCServer(s.grpcSrv, &grpcMetrics{s: s})
	go func() { _ = s.grpcSrv.Serve(gl) }()

	mux := http.NewServeMux()
	mux.HandleFunc("/v1/logs", s.handleHTTP("logs"))
	mux.HandleFunc("/v1/metrics", s.handleHTTP("metrics"))
	s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.httpSrv.Serve(hl) }()

	t.Cleanup(s.Close)
	return s
}

// serverTLS returns a config whose handshakes always use the config most recently
// set with SetTLS, so a test can rotate the server's certificate in place.
func (s *Sink) serverTLS() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			s.tlsMu.RLock()
			defer s.tlsMu.RUnlock()
			return s.tls, nil
		},
	}
}

// SetTLS replaces the TLS config used for new connections.
func (s *Sink) SetTLS(c *tls.Config) {
	s.tlsMu.Lock()
	s.tls = c
	s.tlsMu.Unlock()
}

// SetHTTPKeepAlives turns the HTTP listener's keep-alives on or off. Off closes
// idle connections at once and every other one after its current response, so
// each request makes a new connection and TLS handshake: what a backend that
// restarts or rotates its certificate does to its clients.
func (s *Sink) SetHTTPKeepAlives(on bool) { s.httpSrv.SetKeepAlivesEnabled(on) }

// Close stops both servers.
func (s *Sink) Close() {
	s.grpcSrv.Stop()
	_ = s.httpSrv.Close()
}

// Refuse makes every request fail with a retryable error (gRPC UNAVAILABLE, HTTP
// 503) until Refuse(false): a backend outage.
func (s *Sink) Refuse(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.refuse = status.Error(codes.Unavailable, "sink: backend outage")
	} else {
		s.refuse = nil
	}
}

func (s *Sink) refused() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refuse
}

func (s *Sink) recordLogs(r Request, ld plog.Logs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Signal, r.Items = "logs", ld.LogRecordCount()
	if s.seqCount != nil {
		s.countSeqs(ld)
	} else {
		s.logs = append(s.logs, ld)
	}
	s.nLogs += r.Items
	s.requests = append(s.requests, r)
}

func (s *Sink) recordMetrics(r Request, md pmetric.Metrics) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Signal, r.Items = "metrics", md.DataPointCount()
	s.metrics = append(s.metrics, md)
	s.nPoints += r.Items
	s.requests = append(s.requests, r)
}

// LogRecordCount is the number of log records received so far.
func (s *Sink) LogRecordCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nLogs
}

// DataPointCount is the number of metric data points received so far.
func (s *Sink) DataPointCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nPoints
}

// Logs returns every Logs received, in arrival order.
func (s *Sink) Logs() []plog.Logs {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]plog.Logs(nil), s.logs...)
}

// Metrics returns every Metrics received, in arrival order.
func (s *Sink) Metrics() []pmetric.Metrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]pmetric.Metrics(nil), s.metrics...)
}

// Requests returns a description of every accepted request.
func (s *Sink) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Reset forgets everything received so far.
func (s *Sink) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs, s.metrics, s.requests, s.nLogs, s.nPoints = nil, nil, nil, 0, 0
}

// WaitForLogRecords waits until at least n log records have arrived.
func (s *Sink) WaitForLogRecords(t tb.T, n int, timeout time.Duration) {
	t.Helper()
	if !WaitFor(timeout, func() bool { return s.LogRecordCount() >= n }) {
		t.Fatalf("sink got %d log records, want %d within %s", s.LogRecordCount(), n, timeout)
	}
}

// WaitForDataPoints waits until at least n metric data points have arrived.
func (s *Sink) WaitForDataPoints(t tb.T, n int, timeout time.Duration) {
	t.Helper()
	if !WaitFor(timeout, func() bool { return s.DataPointCount() >= n }) {
		t.Fatalf("sink got %d data points, want %d within %s", s.DataPointCount(), n, timeout)
	}
}

// WaitFor polls cond every 20 ms until it holds or timeout passes, and
// reports which.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	return WaitEvery(timeout, 20*time.Millisecond, cond)
}

// WaitEvery is WaitFor polling every interval, for a cond that costs a scrape
// or a scan of the sink.
func WaitEvery(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

type grpcLogs struct {
	plogotlp.UnimplementedGRPCServer
	s *Sink
}

func (g *grpcLogs) Export(ctx context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	if err := g.s.refused(); err != nil {
		return plogotlp.NewExportResponse(), err
	}
	g.s.recordLogs(grpcRequest(ctx), req.Logs())
	return plogotlp.NewExportResponse(), nil
}

type grpcMetrics struct {
	pmetricotlp.UnimplementedGRPCServer
	s *Sink
}

func (g *grpcMetrics) Export(ctx context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	if err := g.s.refused(); err != nil {
		return pmetricotlp.NewExportResponse(), err
	}
	g.s.recordMetrics(grpcRequest(ctx), req.Metrics())
	return pmetricotlp.NewExportResponse(), nil
}

func grpcRequest(ctx context.Context) Request {
	r := Request{Protocol: "grpc", Header: http.Header{}}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for k, vs := range md {
			for _, v := range vs {
				r.Header.Add(k, v)
			}
		}
	}
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
			c := ti.State.PeerCertificates[0]
			r.PeerCertSubject, r.PeerCertSerial = c.Subject.CommonName, c.SerialNumber.String()
		}
	}
	return r
}

// maxSinkBody bounds what the sink reads from one request, compressed or not.
const maxSinkBody = 64 << 20

func (s *Sink) handleHTTP(signal string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.refused(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		var body io.Reader = http.MaxBytesReader(w, r.Body, maxSinkBody)
		switch r.Header.Get("Content-Encoding") {
		case "gzip":
			zr, err := gzip.NewReader(body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		default:
			dec := s.decoders[r.Header.Get("Content-Encoding")]
			if dec == nil {
				break // an unknown encoding is read as it is
			}
			zr, err := dec(body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			defer zr.Close()
			body = zr
		}
		raw, err := io.ReadAll(io.LimitReader(body, maxSinkBody))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		info := Request{Protocol: "http", Header: r.Header.Clone()}
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			c := r.TLS.PeerCertificates[0]
			info.PeerCertSubject, info.PeerCertSerial = c.Subject.CommonName, c.SerialNumber.String()
		}
		json := r.Header.Get("Content-Type") == "application/json"
		var resp []byte
		switch signal {
		case "logs":
			req := plogotlp.NewExportRequest()
			if json {
				err = req.UnmarshalJSON(raw)
			} else {
				err = req.UnmarshalProto(raw)
			}
			if err == nil {
				s.recordLogs(info, req.Logs())
				resp, _ = plogotlp.NewExportResponse().MarshalProto()
			}
		case "metrics":
			req := pmetricotlp.NewExportRequest()
			if json {
				err = req.UnmarshalJSON(raw)
			} else {
				err = req.UnmarshalProto(raw)
			}
			if err == nil {
				s.recordMetrics(info, req.Metrics())
				resp, _ = pmetricotlp.NewExportResponse().MarshalProto()
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}
}
