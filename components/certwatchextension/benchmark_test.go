// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// The benchmarks compare certwatch with plain configtls (the exporter's own tls:
// block: files loaded once at start) on the same files, against servers that
// require client certificates:
//
//   - Handshake: a new TCP connection and TLS handshake, the only path that
//     reads certwatch's material (one atomic load).
//   - HTTPRequest, GRPCRequest: one export request on an established
//     connection, the per-request path. certwatch adds there, for HTTP, a
//     clone of the request with a trace that checks the material version of
//     the connection it is given; for gRPC one atomic load (the interceptor's
//     remembered conn).
//
// Run: go test -run '^$' -bench . -count 6 ./components/certwatchextension
// and compare each pair within the same run.

type benchEnv struct {
	f   *fixture
	e   *started
	tls *tls.Config // what configtls loads from the same files
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	f := newFixture(b)
	testcerts.AtomicWrite(b, f.dir, f.files(f.serverCA.CertPEM, f.client))
	cc := configtls.NewDefaultClientConfig()
	cc.CAFile, cc.CertFile, cc.KeyFile = f.cfg.CAFile, f.cfg.CertFile, f.cfg.KeyFile
	cfg, err := cc.LoadTLSConfig(context.Background())
	require.NoError(b, err)
	return &benchEnv{f: f, e: startExt(b, f.cfg), tls: cfg}
}

func (env *benchEnv) serverTLS(b *testing.B) *tls.Config {
	return testcerts.ServerTLS(b, env.f.serverCA.Server(b, testcerts.Options{}), env.f.clientCA)
}

func BenchmarkHandshake(b *testing.B) {
	env := newBenchEnv(b)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", env.serverTLS(b))
	require.NoError(b, err)
	b.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = c.(*tls.Conn).Handshake()
				_ = c.Close()
			}()
		}
	}()
	addr := ln.Addr().String()
	ctx := context.Background()

	b.Run("configtls", func(b *testing.B) {
		for b.Loop() {
			raw, err := net.Dial("tcp", addr)
			require.NoError(b, err)
			cfg := env.tls.Clone()
			cfg.ServerName = "127.0.0.1"
			conn := tls.Client(raw, cfg)
			require.NoError(b, conn.HandshakeContext(ctx))
			_ = conn.Close()
		}
	})
	b.Run("certwatch", func(b *testing.B) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		env.e.install(tr)
		for b.Loop() {
			conn, err := tr.DialTLSContext(ctx, "tcp", addr)
			require.NoError(b, err)
			_ = conn.Close()
		}
	})
}

func BenchmarkHTTPRequest(b *testing.B) {
	env := newBenchEnv(b)
	resp, err := plogotlp.NewExportResponse().MarshalProto()
	require.NoError(b, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}))
	srv.TLS = env.serverTLS(b)
	srv.StartTLS()
	b.Cleanup(srv.Close)
	body, ct, _, err := otlpfixture.EncodeLogs(otlpfixture.FluentBitLogs(100, 0), otlpfixture.Encoding{})
	require.NoError(b, err)

	run := func(b *testing.B, client *http.Client) {
		for b.Loop() {
			resp, err := client.Post(srv.URL+"/v1/logs", ct, bytes.NewReader(body))
			require.NoError(b, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}
	b.Run("configtls", func(b *testing.B) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = env.tls
		b.Cleanup(tr.CloseIdleConnections)
		run(b, &http.Client{Transport: tr})
	})
	b.Run("certwatch", func(b *testing.B) {
		client, _ := env.e.httpClient(b)
		run(b, client)
	})
}

type nopLogsServer struct {
	plogotlp.UnimplementedGRPCServer
}

func (nopLogsServer) Export(context.Context, plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	return plogotlp.NewExportResponse(), nil
}

func BenchmarkGRPCRequest(b *testing.B) {
	env := newBenchEnv(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(env.serverTLS(b))))
	plogotlp.RegisterGRPCServer(srv, &nopLogsServer{})
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(srv.Stop)
	req := plogotlp.NewExportRequestFromLogs(otlpfixture.FluentBitLogs(100, 0))
	ctx := context.Background()

	run := func(b *testing.B, cc *grpc.ClientConn) {
		client := plogotlp.NewGRPCClient(cc)
		for b.Loop() {
			_, err := client.Export(ctx, req)
			require.NoError(b, err)
		}
	}
	b.Run("configtls", func(b *testing.B) {
		cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(env.tls)))
		require.NoError(b, err)
		b.Cleanup(func() { _ = cc.Close() })
		run(b, cc)
	})
	b.Run("certwatch", func(b *testing.B) {
		run(b, env.e.grpcConn(b, ln.Addr().String()))
	})
}
