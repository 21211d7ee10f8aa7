// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"compress/gzip"
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.uber.org/zap"

	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension/queuestoragetest"
)

// makeLogs returns n records with seq attributes start..start+n-1, spread
// over a few resources and scopes so that splits must keep them.
func makeLogs(start, n int) plog.Logs {
	ld := plog.NewLogs()
	var sl plog.ScopeLogs
	for i := range n {
		if i%7 == 0 {
			rl := ld.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("k8s.pod.name", "pod-"+string(rune('a'+(start+i)%26)))
			sl = rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName("scope")
		}
		lr := sl.LogRecords().AppendEmpty()
		lr.Attributes().PutInt("seq", int64(start+i))
		lr.Body().SetStr("a log line of some length, like the ones fluent-bit sends")
		lr.SetTimestamp(pcommon.Timestamp(start + i))
	}
	return ld
}

func seqsOf(ld plog.Logs) []int64 {
	var out []int64
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				v, _ := lr.Attributes().Get("seq")
				out = append(out, v.Int())
			}
		}
	}
	return out
}

// backend is a real OTLP/HTTP server on TLS: it decodes every request with
// pdata and answers what respond says.
type backend struct {
	srv    *httptest.Server
	caFile string
	mu     sync.Mutex
	seqs   []int64
	reqs   int
	bodies []int // records per request
	// accepted holds, for each request answered 200, its headers and records.
	accepted []acceptedRequest
	headers  []http.Header
	respond  func(req int) (int, http.Header, []byte)
}

func newBackend(t *testing.T) *backend {
	b := &backend{}
	b.srv = httptest.NewTLSServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	b.caFile = writeCA(t, b.srv)
	return b
}

// writeCA writes the TLS test server's certificate as a CA file.
func writeCA(t testing.TB, srv *httptest.Server) string {
	f := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	return f
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	switch r.Header.Get("Content-Encoding") {
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	case "zstd":
		zr, err := zstd.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" || r.URL.Path != "/v1/logs" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	req := plogotlp.NewExportRequest()
	if err := req.UnmarshalProto(raw); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	n := b.reqs
	b.reqs++
	b.headers = append(b.headers, r.Header.Clone())
	status, hdr, resp := http.StatusOK, http.Header(nil), []byte(nil)
	if b.respond != nil {
		status, hdr, resp = b.respond(n)
	}
	if status == http.StatusOK {
		seqs := seqsOf(req.Logs())
		b.seqs = append(b.seqs, seqs...)
		b.bodies = append(b.bodies, req.Logs().LogRecordCount())
		b.accepted = append(b.accepted, acceptedRequest{header: r.Header.Clone(), seqs: seqs})
	}
	b.mu.Unlock()
	for k, v := range hdr {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	_, _ = w.Write(resp)
}

type acceptedRequest struct {
	header http.Header
	seqs   []int64
}

func (b *backend) acceptedRequests() []acceptedRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]acceptedRequest(nil), b.accepted...)
}

func (b *backend) setRespond(f func(int) (int, http.Header, []byte)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.respond = f
}

func (b *backend) delivered() []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int64(nil), b.seqs...)
}

func (b *backend) waitRecords(t *testing.T, n int) []int64 {
	t.Helper()
	require.Eventually(t, func() bool { return len(b.delivered()) >= n }, 60*time.Second, 20*time.Millisecond, "backend got %d of %d records", len(b.delivered()), n)
	return b.delivered()
}

func wireConfig(b *backend) *Config {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = b.srv.URL
	cfg.ClientConfig.TLS.CAFile = b.caFile
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 50 * time.Millisecond
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	return cfg
}

var storageID = queuestoragetest.ID()

// startLogs creates and starts a logs exporter of factory f named name.
func startLogs(t testing.TB, f exporter.Factory, name string, cfg component.Config, host component.Host, logger *zap.Logger) exporter.Logs {
	set := exportertest.NewNopSettings(f.Type())
	set.ID = component.MustNewIDWithName(f.Type().String(), name)
	if logger != nil {
		set.Logger = logger
	}
	exp, err := f.CreateLogs(context.Background(), set, cfg)
	require.NoError(t, err)
	if host == nil {
		host = componenttest.NewNopHost()
	}
	require.NoError(t, exp.Start(context.Background(), host))
	return exp
}
