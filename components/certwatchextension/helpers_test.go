// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"

	"github.com/otelcol-relay/otelcol-relay/components/certwatchextension/internal/metadata"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// waitTimeout is generous: the tests share two slow cores with other builds.
const waitTimeout = 20 * time.Second

// fixture is one exporter identity on disk: a CA bundle that trusts the server,
// and a client certificate the server requires.
type fixture struct {
	dir      string
	serverCA *testcerts.CA
	clientCA *testcerts.CA
	client   *testcerts.KeyPair
	cfg      *Config
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), serverCA: testcerts.NewCA(t, "server-ca-1"), clientCA: testcerts.NewCA(t, "client-ca")}
	f.client = f.clientCA.Client(t, testcerts.Options{CommonName: "relay-1"})
	f.cfg = createDefaultConfig()
	f.cfg.CAFile = filepath.Join(f.dir, "ca.crt")
	f.cfg.CertFile = filepath.Join(f.dir, "tls.crt")
	f.cfg.KeyFile = filepath.Join(f.dir, "tls.key")
	// Long enough that the tests that check the file watch cannot pass
	// through the poll by accident.
	f.cfg.PollInterval = time.Hour
	return f
}

// newStarted is a fixture with its files written and the extension started
// on them.
func newStarted(t *testing.T) (*fixture, *started) {
	t.Helper()
	f := newFixture(t)
	f.writeValid(t)
	return f, startExt(t, f.cfg)
}

// writeValid writes the server CA and the client key pair, atomically.
func (f *fixture) writeValid(t testing.TB) {
	t.Helper()
	testcerts.AtomicWrite(t, f.dir, f.files(f.serverCA.CertPEM, f.client))
}

// serverTLS serves a certificate from the server CA and requires one from the
// client CA.
func (f *fixture) serverTLS(t testing.TB) *tls.Config {
	t.Helper()
	return testcerts.ServerTLS(t, f.serverCA.Server(t, testcerts.Options{}), f.clientCA)
}

// sink is an OTLP sink behind serverTLS.
func (f *fixture) sink(t testing.TB) *otlpfixture.Sink {
	t.Helper()
	return otlpfixture.NewSink(t, otlpfixture.SinkOptions{TLS: f.serverTLS(t)})
}

func (f *fixture) files(ca []byte, kp *testcerts.KeyPair) map[string][]byte {
	return map[string][]byte{"ca.crt": ca, "tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM}
}

// writePlain writes the files in place, the way a person or a config tool would.
func (f *fixture) writePlain(t *testing.T, files map[string][]byte) {
	t.Helper()
	for _, name := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if b, ok := files[name]; ok {
			testcerts.WriteFile(t, filepath.Join(f.dir, name), b)
		}
	}
}

// started is a certwatch under test with its telemetry and logs.
type started struct {
	*certwatch
	tel  *componenttest.Telemetry
	logs *observer.ObservedLogs
}

func newExt(t testing.TB, cfg *Config) *started {
	t.Helper()
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tt.Shutdown(context.Background()) })
	core, logs := observer.New(zap.DebugLevel)
	set := extensiontest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tt.NewTelemetrySettings()
	set.Logger = zap.New(core)
	e := newCertwatch(set, cfg)
	e.debounce = 50 * time.Millisecond
	return &started{certwatch: e, tel: tt, logs: logs}
}

func startExt(t testing.TB, cfg *Config) *started {
	t.Helper()
	s := newExt(t, cfg)
	require.NoError(t, s.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, s.Shutdown(context.Background())) })
	return s
}

// notAfters is the certificate_not_after gauge by role/serial, each point
// checked to name this instance.
func (s *started) notAfters(t *testing.T) map[string]int64 {
	t.Helper()
	m, err := s.tel.GetMetric(metricCertNotAfter)
	require.NoError(t, err)
	got := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Gauge[int64]).DataPoints {
		ext, _ := dp.Attributes.Value(attrExtension)
		assert.Equal(t, s.id.String(), ext.AsString())
		role, _ := dp.Attributes.Value(attrRole)
		serial, _ := dp.Attributes.Value(attrSer)
		got[role.AsString()+"/"+serial.AsString()] = dp.Value
	}
	return got
}

// clientSerial is the serial of the client certificate in use.
func (s *started) clientSerial() string {
	if c := s.current().client; c != nil {
		return c.serial
	}
	return ""
}

func (s *started) waitClientSerial(t *testing.T, want string) {
	t.Helper()
	require.Eventually(t, func() bool { return s.clientSerial() == want }, waitTimeout, 10*time.Millisecond,
		"client certificate in use is %s, want %s", s.clientSerial(), want)
}

// reloads is the value of the reload counter for result.
func (s *started) reloads(t *testing.T, result string) int64 {
	t.Helper()
	m, err := s.tel.GetMetric(metricReloads)
	require.NoError(t, err)
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if v, ok := dp.Attributes.Value(attrResult); ok && v.AsString() == result {
			return dp.Value
		}
	}
	return 0
}

func (s *started) waitReloads(t *testing.T, result string, want int64) {
	t.Helper()
	require.Eventually(t, func() bool { return s.reloads(t, result) >= want }, waitTimeout, 10*time.Millisecond,
		"reloads{result=%s} = %d, want %d", result, s.reloads(t, result), want)
}

// httpClient is an HTTP client whose transport certwatch configured, as
// confighttp does for an exporter with middlewares: [certwatch].
func (s *started) httpClient(t testing.TB) (*http.Client, *http.Transport) {
	t.Helper()
	wrap, err := s.GetHTTPRoundTripper(context.Background())
	require.NoError(t, err)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	rt, err := wrap(context.Background(), tr)
	require.NoError(t, err)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: rt, Timeout: 10 * time.Second}, tr
}

// grpcConn is a gRPC connection with the exporter's usual insecure-by-default
// credentials first and certwatch's options after them, as configgrpc orders them.
func (s *started) grpcConn(t testing.TB, addr string, first ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts, err := s.GetGRPCClientOptions(context.Background())
	require.NoError(t, err)
	cc, err := grpc.NewClient(addr, append(first, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// postLogs sends one small OTLP/HTTP logs request.
func postLogs(c *http.Client, addr string) error {
	body, ct, _, err := otlpfixture.EncodeLogs(otlpfixture.FluentBitLogs(1, 0), otlpfixture.Encoding{})
	if err != nil {
		return err
	}
	resp, err := c.Post("https://"+addr+"/v1/logs", ct, bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &statusError{resp.Status}
	}
	return nil
}

type statusError struct{ status string }

func (e *statusError) Error() string { return "HTTP " + e.status }

// lastPeerSerial is the client certificate serial of the last request the sink got.
func lastPeerSerial(s *otlpfixture.Sink) string {
	reqs := s.Requests()
	if len(reqs) == 0 {
		return ""
	}
	return reqs[len(reqs)-1].PeerCertSerial
}

func removeAll(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		require.NoError(t, os.Remove(p))
	}
}
