// SPDX-License-Identifier: Apache-2.0

//go:build reliability

package reliability_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// rawCodec sends bytes as they are, so a test can put a malformed message on the
// wire of a real gRPC call.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { *(v.(*[]byte)) = data; return nil }
func (rawCodec) Name() string                       { return "proto" }

// Bad input on 4317 and 4318: each kind is answered with a clear 4xx or gRPC
// status; a well-behaved fluent-bit sender running all along never sees
// anything but 200; RSS stays bounded; the collector never crashes.
func TestBadInput(t *testing.T) {
	b := newBadInput(t)
	t.Run("HTTP", b.http)
	t.Run("gRPC", b.grpc)
	t.Run("slow header client", b.slowHeaders)
	t.Run("2000 idle connections", b.idleConnections)
	t.Run("well-behaved sender unaffected", b.goodSenderUnaffected)
	t.Run("peak RSS bounded", b.rssBounded)
}

// badInput is one gateway, a well-behaved sender feeding it all along, and the
// bad payloads thrown at it.
type badInput struct {
	r                  *rig
	col                *e2e.Collector
	sampler            *e2e.ProcSampler
	good               *e2e.Sender
	stopGood           context.CancelFunc
	client             *e2e.HTTPClient
	garbage, oversized []byte
}

func newBadInput(t *testing.T) *badInput {
	b := &badInput{r: newRig(t, "")}
	b.col = b.r.start(t)
	b.sampler = e2e.SampleProc(b.col.PID(), 100*time.Millisecond)
	t.Cleanup(func() { b.sampler.Stop() })

	// The well-behaved client, all along.
	b.good = b.r.sender(2, 1000)
	goodCtx, stopGood := context.WithCancel(context.Background())
	t.Cleanup(stopGood)
	b.stopGood = stopGood
	b.good.Send(goodCtx, e2e.EncodeChunks(0, 1000, 100))

	b.client = e2e.NewHTTPClient(b.r.gw.HTTPURL, b.r.rcv.Client)
	b.client.Client.Timeout = 2 * time.Minute
	// Not random: random bytes sometimes decode as a truncated field ("unexpected
	// EOF") and sometimes as a bad tag. 0x0f is field 1 with wire type 7, which
	// no protobuf message may contain, so the decoder's answer is always the same.
	b.garbage = bytes.Repeat([]byte{0x0f}, 4096)
	b.oversized = make([]byte, 9<<20) // the gateway refuses bodies over 8 MiB
	_, _ = rand.Read(b.oversized)
	return b
}

func (b *badInput) http(t *testing.T) {
	valid, _, _, err := otlpfixture.EncodeLogs(otlpfixture.FluentBitLogs(10, 1_000_000), otlpfixture.Encoding{})
	if err != nil {
		t.Fatal(err)
	}
	validGz, _, _, _ := otlpfixture.EncodeLogs(otlpfixture.FluentBitLogs(50, 1_000_000), otlpfixture.Encoding{Gzip: true})
	for _, tc := range []struct {
		name, contentType, encoding string
		body                        []byte
		want                        []int
		wantMsg                     string
	}{
		{"malformed protobuf", "application/x-protobuf", "", b.garbage, []int{400}, "proto"},
		{"invalid JSON", "application/json", "", []byte(`{"resourceLogs": [{"resource": `), []int{400}, ""},
		{"wrong content type", "text/plain", "", valid, []int{415}, ""},
		{"truncated gzip", "application/x-protobuf", "gzip", validGz[:len(validGz)/2], []int{400}, ""},
		{"gzip bomb", "application/x-protobuf", "gzip", gzipBomb(t), []int{400}, "request body too large"},
		{"oversized body", "application/x-protobuf", "", b.oversized, []int{400}, "request body too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.sampler.PeakAnon()
			code, body, err := b.client.Post(context.Background(), "/v1/logs", tc.body, tc.contentType, tc.encoding)
			if err != nil {
				t.Fatalf("POST: %v", err)
			}
			ok := false
			for _, w := range tc.want {
				ok = ok || code == w
			}
			if !ok {
				t.Errorf("status %d, want one of %v; body %q", code, tc.want, trim(body))
			}
			if tc.wantMsg != "" && !strings.Contains(strings.ToLower(string(body)), tc.wantMsg) {
				t.Errorf("answer %q does not say what is wrong (want %q)", trim(body), tc.wantMsg)
			}
			time.Sleep(300 * time.Millisecond)
			t.Logf("%d %q; peak anonymous RSS %.0f -> %.0f MiB", code, trim(body), e2e.MiB(before), e2e.MiB(b.sampler.PeakAnon()))
		})
	}
}

func (b *badInput) grpc(t *testing.T) {
	for _, tc := range []struct {
		name, what string
		body       []byte
		ok         func(codes.Code) bool
		want       string
	}{
		{"malformed protobuf", "malformed protobuf", b.garbage,
			func(c codes.Code) bool { return c != codes.OK && c != codes.Unavailable }, "a non-retryable error status"},
		{"oversized message", "9 MiB message", b.oversized,
			func(c codes.Code) bool { return c == codes.ResourceExhausted }, "ResourceExhausted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, err := e2e.DialGRPC(b.r.gw.GRPCAddr, b.r.rcv.Client)
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			var out []byte
			err = cc.Invoke(context.Background(), "/opentelemetry.proto.collector.logs.v1.LogsService/Export", tc.body, &out, grpc.ForceCodec(rawCodec{}))
			if st := status.Convert(err); !tc.ok(st.Code()) {
				t.Errorf("%s over gRPC: %v, want %s", tc.what, err, tc.want)
			} else {
				t.Logf("%s: %s", st.Code(), st.Message())
			}
		})
	}
}

func (b *badInput) slowHeaders(t *testing.T) {
	conn, err := tls.Dial("tcp", strings.TrimPrefix(b.r.gw.HTTPURL, "https://"), b.r.rcv.Client)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	before := b.good.AckedRecords()
	// One byte a second for ten seconds; the others go on meanwhile.
	for _, c := range []byte("POST /v1/l") {
		if _, err := conn.Write([]byte{c}); err != nil {
			t.Fatalf("slow client cut off after a few seconds: %v", err)
		}
		time.Sleep(time.Second)
	}
	if b.good.AckedRecords() <= before {
		t.Errorf("the well-behaved sender made no progress while a client sent headers one byte a second")
	}
}

func (b *badInput) idleConnections(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < 2500 {
		t.Skipf("open file limit %d is too low for 2,000 connections", lim.Cur)
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 2000; i++ {
		addr := strings.TrimPrefix(b.r.gw.HTTPURL, "https://")
		if i%2 == 1 {
			addr = b.r.gw.GRPCAddr
		}
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	// New clients, HTTP and gRPC, are still served while 2,000 sit idle.
	ctx := context.Background()
	if err := b.client.SendLogs(ctx, otlpfixture.FluentBitLogs(100, 2_000_000), otlpfixture.Encoding{Gzip: true}); err != nil {
		t.Errorf("HTTP client with 2,000 idle connections open: %v", err)
	}
	cc, err := e2e.DialGRPC(b.r.gw.GRPCAddr, b.r.rcv.Client)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if err := otlpfixture.SendLogsGRPC(ctx, cc, otlpfixture.FluentBitLogs(100, 2_000_100)); err != nil {
		t.Errorf("gRPC client with 2,000 idle connections open: %v", err)
	}
	st, _ := e2e.ReadProc(b.col.PID())
	t.Logf("with 2,000 idle connections: RSS %.0f MiB (anonymous %.0f MiB)", e2e.MiB(st.RSS), e2e.MiB(st.Anon))
}

// goodSenderUnaffected stops the well-behaved sender: it saw only 200s and
// everything it sent arrived.
func (b *badInput) goodSenderUnaffected(t *testing.T) {
	st := settle(t, b.stopGood, b.good, 2*time.Minute)
	for code := range st.Statuses {
		if code != http.StatusOK {
			t.Errorf("the well-behaved sender saw status %d: bad input affected another client", code)
		}
	}
	expectDelivered(t, b.r.sink, b.good.Acked(), 2*time.Minute)
	if !b.col.Running() {
		t.Fatalf("collector exited:\n%s", b.col.Output())
	}
}

func (b *badInput) rssBounded(t *testing.T) {
	const bound = 256 << 20
	peak := b.sampler.PeakAnon()
	t.Logf("peak anonymous RSS through all bad input: %.0f MiB (VmRSS %.0f MiB)", e2e.MiB(peak), e2e.MiB(b.sampler.PeakRSS()))
	if peak > bound {
		t.Errorf("peak anonymous RSS %.0f MiB exceeds %d MiB", e2e.MiB(peak), bound>>20)
	}
}

// gzipBomb is about 1 MiB of gzip that inflates to 1 GiB of zeros.
func gzipBomb(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for i := 0; i < 1024; i++ {
		if _, err := zw.Write(zeros); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("gzip bomb: %d KiB inflating to 1 GiB", buf.Len()>>10)
	return buf.Bytes()
}

func trim(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
