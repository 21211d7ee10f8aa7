// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/component/componenttest"
)

func TestParseMetadata(t *testing.T) {
	body := `{"status":"success","data":{
		"a_total":[{"type":"counter","help":"A.","unit":""}],
		"h":[{"type":"histogram","help":"H.","unit":"seconds"},{"type":"histogram","help":"H, other help.","unit":""}],
		"mixed":[{"type":"counter","help":""},{"type":"gauge","help":""}],
		"u":[{"type":"unknown","help":""}],
		"gh":[{"type":"gaugehistogram","help":""}]}}`
	s, err := parseMetadata([]byte(body), t0)
	if err != nil {
		t.Fatal(err)
	}
	if m := s.families["h"]; m.typ != model.MetricTypeHistogram || m.ambiguous || m.help != "H." || m.unit != "seconds" {
		t.Errorf("h = %+v: same type with other help is not ambiguous", m)
	}
	if !s.families["mixed"].ambiguous || len(s.ambiguous) != 1 || s.ambiguous[0] != "mixed" {
		t.Errorf("mixed not reported ambiguous: %+v %v", s.families["mixed"], s.ambiguous)
	}
	for name, want := range map[string]role{
		"a_total": roleCounter, "h_bucket": roleBucket, "h_sum": roleSum, "h_count": roleCount,
		"h": roleNone, "mixed": roleAmbiguous, "u": roleGauge, "gh_bucket": roleNone, "nope": roleNone,
	} {
		if got, _, _ := s.lookup(name); got != want {
			t.Errorf("lookup(%q) = %d, want %d", name, got, want)
		}
	}
}

// OpenMetrics names a counter family without _total.
func TestLookupOpenMetricsCounter(t *testing.T) {
	s, err := parseMetadata([]byte(`{"status":"success","data":{"req":[{"type":"counter","help":"R."}]}}`), t0)
	if err != nil {
		t.Fatal(err)
	}
	r, fam, meta := s.lookup("req_total")
	if r != roleCounter || fam != "req_total" || meta.help != "R." {
		t.Errorf("lookup(req_total) = %d %q %+v", r, fam, meta)
	}
}

// Each bad answer is refused with an error that says what was wrong, and the
// processor keeps passing data through.
func TestBadMetadataResponsesAreRefused(t *testing.T) {
	const maxSize = 64 << 10
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"not json", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("<html>login here</html>"))
		}, "malformed metadata response"},
		{"truncated json", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"status":"success","data":{"a":[{"type":"coun`))
		}, "malformed metadata response"},
		{"trailing garbage", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"status":"success","data":{}} {"again":1}`))
		}, "trailing data"},
		{"not a prometheus answer", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"data":{}}`))
		}, `no "status" field`},
		{"api error", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"invalid parameter"}`))
		}, `status "error" (bad_data: invalid parameter)`},
		{"success without data", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"status":"success"}`))
		}, `no "data" object`},
		{"wrong shape", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"status":"success","data":["a","b"]}`))
		}, "malformed metadata response"},
		{"http error", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "forbidden by proxy", http.StatusForbidden)
		}, "HTTP 403 Forbidden"},
		{"declared too large", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(maxSize*4))
			_, _ = w.Write(bytes.Repeat([]byte(" "), maxSize*4))
		}, fmt.Sprintf("exceeds max_response_size (%d bytes)", maxSize)},
		{"streamed too large", func(w http.ResponseWriter, _ *http.Request) {
			// No Content-Length: the limit must hold while reading.
			_, _ = w.Write([]byte(`{"status":"success","data":{"a":[{"type":"counter","help":"`))
			chunk := bytes.Repeat([]byte("x"), 4096)
			for range 4 * maxSize / 4096 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}, fmt.Sprintf("exceeds max_response_size (%d bytes)", maxSize)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newMetadataServer(t, nil)
			srv.set(c.handler)
			p := newTestProcessor(t, srv.URL, func(cfg *Config) { cfg.MaxResponseSize = maxSize })
			_, err := p.fetcher.fetch(context.Background(), t0)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
			if !strings.Contains(err.Error(), srv.URL+defaultMetadataPath) {
				t.Errorf("error %q does not name the URL", err)
			}
			if p.meta.Load() != nil {
				t.Fatal("bad metadata was taken into use")
			}
			s := newScrape(t0)
			s.add("demo_requests_total", 1)
			before := protoBytes(t, s.md)
			if !bytes.Equal(before, protoBytes(t, p.process(t, s.md))) {
				t.Error("data changed although no metadata was accepted")
			}
		})
	}
}

// A huge response is cut off after max_response_size: the client stops reading
// instead of buffering what the server keeps sending.
func TestHugeResponseMemoryStaysBounded(t *testing.T) {
	const maxSize = 1 << 20
	var written atomic.Int64
	srv := newMetadataServer(t, nil)
	srv.set(func(w http.ResponseWriter, _ *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for range (1 << 30) / len(chunk) { // up to 1 GiB
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	p := newTestProcessor(t, srv.URL, func(cfg *Config) { cfg.MaxResponseSize = maxSize })
	_, err := p.fetcher.fetch(context.Background(), t0)
	if err == nil || !strings.Contains(err.Error(), "exceeds max_response_size") {
		t.Fatalf("error %v, want max_response_size refusal", err)
	}
	// Give the server a moment to notice the closed connection, then check it
	// could not push anywhere near the whole gigabyte.
	time.Sleep(200 * time.Millisecond)
	if w := written.Load(); w > 64*maxSize {
		t.Errorf("server wrote %d bytes before the client gave up; want the read bounded near %d", w, maxSize)
	}
}

func TestBearerTokenFileIsReadOnEveryRefreshAndNeverLeaks(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	const secret1, secret2 = "s3cr3t-token-one", "s3cr3t-token-two"
	if err := os.WriteFile(tokenFile, []byte(secret1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var want atomic.Value
	want.Store("Bearer " + secret1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want.Load().(string) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		jsonMetadata(demoMetadata)(w, r)
	}))
	t.Cleanup(srv.Close)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newTestProcessor(t, srv.URL, func(c *Config) {
		c.BearerTokenFile = tokenFile
		c.TLS.CAFile = caFile
	})
	if p.meta.Load() == nil {
		t.Fatalf("first read with token and CA failed: %v", p.logs.All())
	}

	// The token rotates: the next refresh must send the new one.
	if err := os.WriteFile(tokenFile, []byte(secret2), 0o600); err != nil {
		t.Fatal(err)
	}
	want.Store("Bearer " + secret2)
	if _, err := p.fetcher.fetch(context.Background(), t0); err != nil {
		t.Fatalf("fetch after rotation: %v", err)
	}

	// A rejected token produces an error and a log line without the token.
	want.Store("Bearer something-else")
	p.refresh(context.Background(), time.Hour)
	for _, e := range p.logs.All() {
		line := e.Message + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, secret1) || strings.Contains(line, secret2) {
			t.Fatalf("log line leaks the token: %s", line)
		}
	}
	if len(p.logs.FilterMessageSnippet("refresh failed").All()) != 1 {
		t.Errorf("no warning for the rejected token: %v", p.logs.All())
	}
}

func TestTLSWithoutTheRightCAFails(t *testing.T) {
	srv := httptest.NewTLSServer(jsonMetadata(demoMetadata))
	t.Cleanup(srv.Close)
	p := newTestProcessor(t, srv.URL, nil)
	if p.meta.Load() != nil {
		t.Fatal("metadata read from a server whose certificate is not trusted")
	}
	_, err := p.fetcher.fetch(context.Background(), t0)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("error %v, want a certificate error", err)
	}
}

// A server that never answers costs one timeout per refresh, no more.
func TestTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-block }))
	t.Cleanup(func() { close(block); srv.Close() })
	cfg := createDefaultConfig()
	cfg.Endpoint = srv.URL
	cfg.Timeout = 200 * time.Millisecond
	client, err := cfg.ToClient(context.Background(), nil, componenttest.NewNopTelemetrySettings())
	if err != nil {
		t.Fatal(err)
	}
	f := &fetcher{client: client, url: cfg.metadataURL(), timeout: cfg.Timeout, maxBytes: cfg.MaxResponseSize}
	done := make(chan error, 1)
	go func() { _, err := f.fetch(context.Background(), t0); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("fetch from a silent server succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("fetch did not give up on a silent server")
	}
}

func TestRedactsUserinfo(t *testing.T) {
	f := &fetcher{url: "https://user:hunter2@prom:9090/api/v1/metadata"}
	if strings.Contains(f.redactedURL(), "hunter2") {
		t.Errorf("redacted URL %q still has the password", f.redactedURL())
	}
}

// A metadata endpoint that redirects elsewhere never gets the token sent on:
// not to plain http on the same host (Go's client would copy the header
// there), not to another host. A redirect within the endpoint's own origin is
// still followed, with the token.
func TestTokenIsNeverSentAfterARedirectToAnotherOrigin(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	const secret = "s3cr3t-redirect-token"
	if err := os.WriteFile(tokenFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var leaked []string
	catcher := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			leaked = append(leaked, fmt.Sprintf("%s got %s (Authorization %v)", name, r.URL, r.Header.Get("Authorization") != ""))
			mu.Unlock()
			jsonMetadata(demoMetadata)(w, r)
		}))
	}
	plain := catcher("plain http on the same host")
	t.Cleanup(plain.Close)
	var target atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved"+defaultMetadataPath {
			if r.Header.Get("Authorization") != "Bearer "+secret {
				http.Error(w, "no token after a same-origin redirect", http.StatusUnauthorized)
				return
			}
			r.URL.Path = defaultMetadataPath
			jsonMetadata(demoMetadata)(w, r)
			return
		}
		http.Redirect(w, r, target.Load().(string), http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	target.Store(plain.URL + defaultMetadataPath)
	p := newTestProcessor(t, srv.URL, func(c *Config) {
		c.BearerTokenFile = tokenFile
		c.TLS.CAFile = caFile
	})
	_, err := p.fetcher.fetch(context.Background(), t0)
	if err == nil || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("redirect to http on the same host: error %v, want a refusal", err)
	}
	for _, other := range []string{strings.Replace(plain.URL, "127.0.0.1", "localhost", 1), "https://127.0.0.2:1"} {
		target.Store(other + defaultMetadataPath)
		if _, err := p.fetcher.fetch(context.Background(), t0); err == nil || !strings.Contains(err.Error(), "not followed") {
			t.Errorf("redirect to %s: error %v, want a refusal", other, err)
		}
	}
	mu.Lock()
	if len(leaked) != 0 {
		t.Errorf("requests followed a redirect to another origin: %v", leaked)
	}
	mu.Unlock()
	for _, e := range p.logs.All() {
		if strings.Contains(e.Message+fmt.Sprint(e.ContextMap()), secret) {
			t.Fatalf("log line leaks the token: %s", e.Message)
		}
	}

	target.Store(srv.URL + "/moved" + defaultMetadataPath)
	if _, err := p.fetcher.fetch(context.Background(), t0); err != nil {
		t.Errorf("same-origin redirect: %v", err)
	}
}
