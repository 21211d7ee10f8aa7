// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

func TestConfigValidate(t *testing.T) {
	ok := func() *Config {
		c := createDefaultConfig()
		c.CAFile, c.CertFile, c.KeyFile = "/c/ca.crt", "/c/tls.crt", "/c/tls.key"
		return c
	}
	require.NoError(t, ok().Validate())
	caOnly := createDefaultConfig()
	caOnly.CAFile = "/c/ca.crt"
	require.NoError(t, caOnly.Validate())
	pairOnly := createDefaultConfig()
	pairOnly.CertFile, pairOnly.KeyFile = "/c/tls.crt", "/c/tls.key"
	require.NoError(t, pairOnly.Validate())
	// The system roots and no client certificate: a header-only backend.
	require.NoError(t, createDefaultConfig().Validate())
	// A server with no file: plaintext receivers, nothing to watch.
	noFiles := createDefaultConfig()
	noFiles.Server = true
	require.NoError(t, noFiles.Validate())

	for name, tc := range map[string]struct {
		mutate func(*Config)
		want   string
	}{
		"cert only":      {func(c *Config) { c.KeyFile = "" }, `cert_file ("/c/tls.crt") and key_file ("") must be set together`},
		"key only":       {func(c *Config) { c.CertFile = "" }, `cert_file ("") and key_file ("/c/tls.key") must be set together`},
		"min version":    {func(c *Config) { c.MinVersion = "1.4" }, `min_version: "1.4" is not a TLS version`},
		"poll too short": {func(c *Config) { c.PollInterval = time.Millisecond }, "poll_interval: 1ms is below the minimum of 100ms"},
		"system pool without ca_file": {func(c *Config) { c.CAFile = ""; c.IncludeSystemCACertsPool = true },
			"include_system_ca_certs_pool: true needs ca_file"},
		"server without keypair": {func(c *Config) { c.Server = true; c.CertFile, c.KeyFile = "", "" },
			`server: true with ca_file ("/c/ca.crt") needs cert_file and key_file`},
		"server with system pool": {func(c *Config) { c.Server = true; c.IncludeSystemCACertsPool = true },
			"include_system_ca_certs_pool: a server (server: true) verifies its clients against ca_file alone"},
	} {
		t.Run(name, func(t *testing.T) {
			c := ok()
			tc.mutate(c)
			err := c.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, "certwatch", f.Type().String())
	require.NoError(t, componenttest.CheckConfigStruct(f.CreateDefaultConfig()))
	cfg := f.CreateDefaultConfig().(*Config)
	assert.Equal(t, "1.2", cfg.MinVersion)
	assert.Equal(t, 30*time.Second, cfg.PollInterval)
}

// invalidCases are the ways new material can be wrong. Each returns the files to
// write and what the error must say.
func invalidCases(t *testing.T, f *fixture) map[string]struct {
	files map[string][]byte
	want  []string
} {
	caPEM := f.serverCA.CertPEM
	other := f.clientCA.Client(t, testcerts.Options{CommonName: "other"})
	expired := f.clientCA.Client(t, testcerts.Options{CommonName: "expired",
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	future := f.clientCA.Client(t, testcerts.Options{CommonName: "future",
		NotBefore: time.Now().Add(time.Hour), NotAfter: time.Now().Add(48 * time.Hour)})
	oldCA := testcerts.NewCAWithValidity(t, "old-ca", time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
	return map[string]struct {
		files map[string][]byte
		want  []string
	}{
		"garbage cert PEM": {
			map[string][]byte{"ca.crt": caPEM, "tls.crt": []byte("not a certificate\n"), "tls.key": f.client.KeyPEM},
			[]string{f.cfg.CertFile, "no PEM certificate found"}},
		"corrupt cert DER": {
			map[string][]byte{"ca.crt": caPEM, "tls.crt": []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "tls.key": f.client.KeyPEM},
			[]string{f.cfg.CertFile, "certificate #1 does not parse"}},
		"garbage key": {
			map[string][]byte{"ca.crt": caPEM, "tls.crt": f.client.CertPEM, "tls.key": []byte("secret-but-not-a-key")},
			[]string{f.cfg.KeyFile, "no PEM private key found"}},
		"mismatched key": {
			map[string][]byte{"ca.crt": caPEM, "tls.crt": f.client.CertPEM, "tls.key": other.KeyPEM},
			[]string{f.cfg.KeyFile, "does not match the certificate in cert_file", f.cfg.CertFile}},
		"expired cert": {
			map[string][]byte{"ca.crt": caPEM, "tls.crt": expired.CertPEM, "tls.key": expired.KeyPEM},
			[]string{f.cfg.CertFile, `certificate "expired" has expired`}},
		"not yet valid cert": {
			map[string][]byte{"ca.crt": caPEM, "tls.crt": future.CertPEM, "tls.key": future.KeyPEM},
			[]string{f.cfg.CertFile, `certificate "future" is not valid yet`}},
		"empty cert file": {
			map[string][]byte{"ca.crt": caPEM, "tls.crt": nil, "tls.key": f.client.KeyPEM},
			[]string{f.cfg.CertFile, "is empty"}},
		"empty key file": {
			map[string][]byte{"ca.crt": caPEM, "tls.crt": f.client.CertPEM, "tls.key": nil},
			[]string{f.cfg.KeyFile, "is empty"}},
		"empty CA bundle": {
			map[string][]byte{"ca.crt": []byte("\n"), "tls.crt": f.client.CertPEM, "tls.key": f.client.KeyPEM},
			[]string{f.cfg.CAFile, "is empty"}},
		"CA bundle without certificates": {
			map[string][]byte{"ca.crt": f.client.KeyPEM, "tls.crt": f.client.CertPEM, "tls.key": f.client.KeyPEM},
			[]string{f.cfg.CAFile, "no PEM certificate found"}},
		"expired CA bundle": {
			map[string][]byte{"ca.crt": oldCA.CertPEM, "tls.crt": f.client.CertPEM, "tls.key": f.client.KeyPEM},
			[]string{f.cfg.CAFile, "none of its 1 certificates is within its validity window"}},
	}
}

// keyLeaked reports whether s contains any base64 line of a private key.
func keyLeaked(s string, keys ...[]byte) bool {
	for _, k := range keys {
		for _, line := range strings.Split(string(k), "\n") {
			if len(line) > 16 && !strings.HasPrefix(line, "-----") && strings.Contains(s, line) {
				return true
			}
		}
	}
	return strings.Contains(s, "secret-but-not-a-key")
}

func TestStartFailsOnInvalidMaterial(t *testing.T) {
	f := newFixture(t)
	for name, tc := range invalidCases(t, f) {
		t.Run(name, func(t *testing.T) {
			f.writePlain(t, tc.files)
			e := newExt(t, f.cfg)
			err := e.Start(context.Background(), componenttest.NewNopHost())
			require.Error(t, err)
			for _, want := range tc.want {
				assert.Contains(t, err.Error(), want)
			}
			assert.False(t, keyLeaked(err.Error(), f.client.KeyPEM, tc.files["tls.key"]), "error leaks key material: %v", err)
			require.NoError(t, e.Shutdown(context.Background()))
		})
	}
}

func TestStartFailsOnMissingFiles(t *testing.T) {
	f := newFixture(t)
	f.writeValid(t)
	for _, name := range []string{"ca.crt", "tls.crt", "tls.key"} {
		t.Run(name, func(t *testing.T) {
			cfg := *f.cfg
			missing := filepath.Join(t.TempDir(), name)
			switch name {
			case "ca.crt":
				cfg.CAFile = missing
			case "tls.crt":
				cfg.CertFile = missing
			case "tls.key":
				cfg.KeyFile = missing
			}
			err := newExt(t, &cfg).Start(context.Background(), componenttest.NewNopHost())
			require.Error(t, err)
			assert.Contains(t, err.Error(), missing)
			assert.Contains(t, err.Error(), "no such file or directory")
		})
	}
}

// TestRotation rotates the client certificate the three ways files get replaced
// and checks, each time, that the material in use changed and that the next
// handshake with a server that requires client certificates presents it.
func TestRotation(t *testing.T) {
	for _, how := range []string{"kubelet atomic writer", "plain overwrite", "delete and recreate"} {
		t.Run(how, func(t *testing.T) {
			f := newFixture(t)
			write := func(files map[string][]byte) {
				switch how {
				case "kubelet atomic writer":
					testcerts.AtomicWrite(t, f.dir, files)
				case "plain overwrite":
					f.writePlain(t, files)
				case "delete and recreate":
					if _, err := os.Stat(f.cfg.CertFile); err == nil {
						removeAll(t, f.cfg.CAFile, f.cfg.CertFile, f.cfg.KeyFile)
					}
					f.writePlain(t, files)
				}
			}
			write(f.files(f.serverCA.CertPEM, f.client))
			e := startExt(t, f.cfg)

			sink := f.sink(t)
			client, _ := e.httpClient(t)
			require.NoError(t, postLogs(client, sink.HTTPAddr))
			assert.Equal(t, f.client.Serial(), lastPeerSerial(sink))

			rotations := 3
			if how == "kubelet atomic writer" {
				rotations = 10
			}
			for i := 1; i <= rotations; i++ {
				kp := f.clientCA.Client(t, testcerts.Options{CommonName: "relay-rotated"})
				write(f.files(f.serverCA.CertPEM, kp))
				e.waitClientSerial(t, kp.Serial())
				e.waitReloads(t, resultSuccess, int64(i))
				if i == 1 || i == 2 || i == rotations {
					// The reload closed the idle connection, so this
					// request makes a new one.
					require.NoError(t, postLogs(client, sink.HTTPAddr))
					assert.Equal(t, kp.Serial(), lastPeerSerial(sink), "rotation %d", i)
				}
			}
			if how == "kubelet atomic writer" {
				// Its one rename swaps every file at once.
				assert.Zero(t, e.reloads(t, resultFailure), "a rotation was seen half-done")
			}
		})
	}
}

func TestPollBackstop(t *testing.T) {
	f := newFixture(t)
	f.writeValid(t)
	f.cfg.PollInterval = 200 * time.Millisecond
	e := newExt(t, f.cfg)
	e.watchFS = false
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, e.Shutdown(context.Background())) })

	kp := f.clientCA.Client(t, testcerts.Options{CommonName: "polled"})
	testcerts.AtomicWrite(t, f.dir, f.files(f.serverCA.CertPEM, kp))
	e.waitClientSerial(t, kp.Serial())
}

// TestInvalidMaterialKeepsLastGood writes each kind of bad material into a
// running extension: it is rejected, counted and logged, and handshakes keep
// using the previous material.
func TestInvalidMaterialKeepsLastGood(t *testing.T) {
	f, e := newStarted(t)
	sink := f.sink(t)
	client, tr := e.httpClient(t)

	failures := int64(0)
	for name, tc := range invalidCases(t, f) {
		t.Run(name, func(t *testing.T) {
			testcerts.AtomicWrite(t, f.dir, tc.files)
			failures++
			e.waitReloads(t, resultFailure, failures)
			assert.Equal(t, f.client.Serial(), e.clientSerial())

			logged := e.logs.FilterMessage("Rejected new TLS material; the last good material stays in use").All()
			require.NotEmpty(t, logged)
			msg := logged[len(logged)-1].ContextMap()["error"].(string)
			for _, want := range tc.want {
				assert.Contains(t, msg, want)
			}
			assert.False(t, keyLeaked(msg, f.client.KeyPEM, tc.files["tls.key"]), "log leaks key material: %s", msg)

			tr.CloseIdleConnections()
			require.NoError(t, postLogs(client, sink.HTTPAddr))
			assert.Equal(t, f.client.Serial(), lastPeerSerial(sink))
		})
	}
	assert.Zero(t, e.reloads(t, resultSuccess))

	// Good material again: accepted.
	kp := f.clientCA.Client(t, testcerts.Options{CommonName: "fixed"})
	testcerts.AtomicWrite(t, f.dir, f.files(f.serverCA.CertPEM, kp))
	e.waitClientSerial(t, kp.Serial())
	assert.Equal(t, int64(1), e.reloads(t, resultSuccess))
}

// TestCARotation is the order an operator follows: the server moves to a
// certificate from a new CA (handshakes fail: certwatch does not trust it yet),
// then the bundle with the old and the new CA is written and delivery resumes,
// over HTTP and over gRPC.
func TestCARotation(t *testing.T) {
	f, e := newStarted(t)
	sink := f.sink(t)
	client, tr := e.httpClient(t)
	cc := e.grpcConn(t, sink.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	ctx := context.Background()
	require.NoError(t, postLogs(client, sink.HTTPAddr))
	require.NoError(t, otlpfixture.SendLogsGRPC(ctx, cc, otlpfixture.FluentBitLogs(1, 0)))

	newCA := testcerts.NewCA(t, "server-ca-2")
	sink.SetTLS(testcerts.ServerTLS(t, newCA.Server(t, testcerts.Options{}), f.clientCA))
	tr.CloseIdleConnections()
	err := postLogs(client, sink.HTTPAddr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate signed by unknown authority")
	// A new gRPC connection fails the same way.
	cc2 := e.grpcConn(t, sink.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.Error(t, otlpfixture.SendLogsGRPC(ctx, cc2, otlpfixture.FluentBitLogs(1, 0)))

	testcerts.AtomicWrite(t, f.dir, f.files(testcerts.Bundle(f.serverCA, newCA), f.client))
	e.waitReloads(t, resultSuccess, 1)
	require.NoError(t, postLogs(client, sink.HTTPAddr))
	// The reload reset cc2's connect backoff, so it reconnects with the new
	// bundle without waiting out its backoff.
	require.Eventually(t, func() bool {
		return otlpfixture.SendLogsGRPC(ctx, cc2, otlpfixture.FluentBitLogs(1, 0)) == nil
	}, waitTimeout, 50*time.Millisecond)
}

// TestGRPCCredentialsWin checks that certwatch's credentials replace the ones
// configgrpc sets before the middleware options (insecure for http://, a
// default TLS config for https://), and that each new connection presents the
// certificate current at its handshake.
func TestGRPCCredentialsWin(t *testing.T) {
	f, e := newStarted(t)
	sink := f.sink(t)
	ctx := context.Background()
	for name, first := range map[string]grpc.DialOption{
		"insecure":    grpc.WithTransportCredentials(insecure.NewCredentials()),
		"default tls": grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})),
	} {
		cc := e.grpcConn(t, sink.GRPCAddr, first)
		require.NoError(t, otlpfixture.SendLogsGRPC(ctx, cc, otlpfixture.FluentBitLogs(1, 0)), name)
		assert.Equal(t, f.client.Serial(), lastPeerSerial(sink), name)
	}

	kp := f.clientCA.Client(t, testcerts.Options{CommonName: "relay-2"})
	testcerts.AtomicWrite(t, f.dir, f.files(f.serverCA.CertPEM, kp))
	e.waitClientSerial(t, kp.Serial())
	cc := e.grpcConn(t, sink.GRPCAddr)
	require.NoError(t, otlpfixture.SendLogsGRPC(ctx, cc, otlpfixture.FluentBitLogs(1, 0)))
	assert.Equal(t, kp.Serial(), lastPeerSerial(sink))
}

func TestServerNameOverride(t *testing.T) {
	f := newFixture(t)
	f.writeValid(t)
	f.cfg.ServerNameOverride = "otlp.example.com"
	e := startExt(t, f.cfg)
	sink := otlpfixture.NewSink(t, otlpfixture.SinkOptions{TLS: testcerts.ServerTLS(t,
		f.serverCA.Server(t, testcerts.Options{DNSNames: []string{"otlp.example.com"}}), f.clientCA)})
	client, _ := e.httpClient(t)
	require.NoError(t, postLogs(client, sink.HTTPAddr))
	cc := e.grpcConn(t, sink.GRPCAddr)
	require.NoError(t, otlpfixture.SendLogsGRPC(context.Background(), cc, otlpfixture.FluentBitLogs(1, 0)))

	// Without the override the same server fails hostname verification.
	f.cfg.ServerNameOverride = ""
	plain := startExt(t, f.cfg)
	client, _ = plain.httpClient(t)
	err := postLogs(client, sink.HTTPAddr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "127.0.0.1")
}

func TestHTTPMiddlewareMustBeLast(t *testing.T) {
	_, e := newStarted(t)
	wrap, err := e.GetHTTPRoundTripper(context.Background())
	require.NoError(t, err)
	_, err = wrap(context.Background(), roundTripperFunc(http.DefaultTransport.RoundTrip))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "must be the last entry of the exporter's middlewares")
	assert.Contains(t, err.Error(), e.id.String())
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestMiddlewareBeforeStart(t *testing.T) {
	e := newExt(t, newFixture(t).cfg)
	_, err := e.GetGRPCClientOptions(context.Background())
	require.ErrorContains(t, err, "is not started")
	_, err = e.GetHTTPRoundTripper(context.Background())
	require.ErrorContains(t, err, "is not started")
}

func TestTelemetry(t *testing.T) {
	f := newFixture(t)
	f.writeValid(t)
	before := time.Now()
	e := startExt(t, f.cfg)

	lastReload := func() float64 {
		m, err := e.tel.GetMetric(metricLastReload)
		require.NoError(t, err)
		return m.Data.(metricdata.Gauge[float64]).DataPoints[0].Value
	}
	assert.Equal(t, map[string]int64{
		"client/" + f.client.Serial():                 f.client.Cert.NotAfter.Unix(),
		"ca/" + f.serverCA.Cert.SerialNumber.String(): f.serverCA.Cert.NotAfter.Unix(),
	}, e.notAfters(t))
	first := lastReload()
	assert.GreaterOrEqual(t, first, float64(before.Unix()))
	assert.Equal(t, int64(0), e.reloads(t, resultSuccess))
	assert.Equal(t, int64(0), e.reloads(t, resultFailure))

	kp := f.clientCA.Client(t, testcerts.Options{NotAfter: time.Now().Add(90 * 24 * time.Hour)})
	testcerts.AtomicWrite(t, f.dir, f.files(f.serverCA.CertPEM, kp))
	e.waitReloads(t, resultSuccess, 1)
	assert.Equal(t, kp.Cert.NotAfter.Unix(), e.notAfters(t)["client/"+kp.Serial()])
	assert.NotContains(t, e.notAfters(t), "client/"+f.client.Serial())
	assert.GreaterOrEqual(t, lastReload(), first)
}

func TestShutdownStopsGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newFixture(t)
	f.writeValid(t)
	f.cfg.PollInterval = 100 * time.Millisecond
	e := newExt(t, f.cfg)
	require.NoError(t, e.Start(context.Background(), componenttest.NewNopHost()))
	// Let the watcher handle events and polls before it is stopped.
	kp := f.clientCA.Client(t, testcerts.Options{})
	testcerts.AtomicWrite(t, f.dir, f.files(f.serverCA.CertPEM, kp))
	e.waitClientSerial(t, kp.Serial())
	require.NoError(t, e.Shutdown(context.Background()))
	// A second Shutdown, and Shutdown without Start, are harmless.
	require.NoError(t, e.Shutdown(context.Background()))
	require.NoError(t, newExt(t, f.cfg).Shutdown(context.Background()))
}

// An instance with server: true watches a receiver's serving keypair and the
// bundle its clients are verified against: it reports their expiry as roles
// server and client_ca, follows a rotation, and refuses to be an exporter's
// middleware (it would offer the serving keypair to a backend).
func TestServerMaterial(t *testing.T) {
	f := newFixture(t)
	serving := f.serverCA.Server(t, testcerts.Options{CommonName: "otelcol-relay.otelcol-relay.svc", NotAfter: time.Now().Add(5 * 24 * time.Hour)})
	testcerts.AtomicWrite(t, f.dir, f.files(f.clientCA.CertPEM, serving))
	f.cfg.Server = true
	e := startExt(t, f.cfg)

	assert.Equal(t, map[string]int64{
		"server/" + serving.Serial():                         serving.Cert.NotAfter.Unix(),
		"client_ca/" + f.clientCA.Cert.SerialNumber.String(): f.clientCA.Cert.NotAfter.Unix(),
	}, e.notAfters(t))

	renewed := f.serverCA.Server(t, testcerts.Options{CommonName: "otelcol-relay.otelcol-relay.svc", NotAfter: time.Now().Add(90 * 24 * time.Hour)})
	testcerts.AtomicWrite(t, f.dir, f.files(f.clientCA.CertPEM, renewed))
	e.waitReloads(t, resultSuccess, 1)
	assert.Equal(t, renewed.Cert.NotAfter.Unix(), e.notAfters(t)["server/"+renewed.Serial()])

	_, err := e.GetHTTPRoundTripper(context.Background())
	require.ErrorContains(t, err, "has server: true: it watches a server's certificates (the receivers') and cannot be an exporter's middleware")
	_, err = e.GetGRPCClientOptions(context.Background())
	require.ErrorContains(t, err, "cannot be an exporter's middleware")
}
