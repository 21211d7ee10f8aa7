// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensionmiddleware"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// defaultDebounce is how long the watcher waits after the last file-system event
// before it reads the files: long enough to see a burst (a plain cert-then-key
// write, a delete-then-recreate) as one change, short enough not to matter.
const defaultDebounce = 200 * time.Millisecond

// maxRefusals bounds how often one HTTP request is turned away from a
// connection made with older material (see versionTransport). Each refusal
// retires a connection, so it is only reached when a reload follows another.
const maxRefusals = 10

// certwatch serves the current TLS material to the exporters that reference it.
//
// Only handshakes read the material (one atomic load); requests on an
// established connection never touch the extension.
type certwatch struct {
	cfg        *Config
	id         component.ID
	logger     *zap.Logger
	settings   component.TelemetrySettings
	minVersion uint16
	debounce   time.Duration
	// watchFS can be turned off by tests to prove the poll alone suffices.
	watchFS bool

	cur atomic.Pointer[material]
	tel *telemetry

	// lastSeen identifies the last content (or read error) the watcher acted
	// on, so an unchanged file costs a hash and nothing else, and one bad
	// rotation counts and logs one failure however often it is polled.
	lastSeen [sha256.Size]byte
	// retryAt is set while the content last seen was rejected as not valid
	// yet: the same content is validated again from then on, instead of
	// being skipped as unchanged. pendingNotBefore (unix s, 0: none) shows it
	// on the metrics endpoint.
	retryAt          time.Time
	pendingNotBefore atomic.Int64

	mu         sync.Mutex
	transports []*http.Transport
	conns      map[*grpc.ClientConn]struct{}

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var (
	_ extension.Extension            = (*certwatch)(nil)
	_ extensionmiddleware.GRPCClient = (*certwatch)(nil)
	_ extensionmiddleware.HTTPClient = (*certwatch)(nil)
)

func newCertwatch(set extension.Settings, cfg *Config) *certwatch {
	return &certwatch{
		cfg:        cfg,
		id:         set.ID,
		logger:     set.Logger,
		settings:   set.TelemetrySettings,
		minVersion: tlsVersions[cfg.MinVersion],
		debounce:   defaultDebounce,
		watchFS:    true,
		conns:      map[*grpc.ClientConn]struct{}{},
	}
}

func (e *certwatch) current() *material { return e.cur.Load() }

// loadAndSwap validates what was read from the files and, if it is good, makes
// it the material the next handshakes use. On error the material in use stays.
// Start and check both take material in through it.
func (e *certwatch) loadAndSwap(fc fileContents, hash [sha256.Size]byte, now time.Time) (*material, error) {
	m, err := buildMaterial(e.cfg, fc, hash, e.minVersion, now)
	if err != nil {
		return nil, err
	}
	e.cur.Store(m)
	return m, nil
}

// Start loads the material and fails when it is missing or invalid: an exporter
// must not start with an identity it cannot present.
func (e *certwatch) Start(_ context.Context, _ component.Host) error {
	// At start there is no material to keep: files that did not settle are
	// validated as last read, and a torn pair fails Start like any other.
	fc, hash, _, err := readSettled(e.cfg)
	var m *material
	if err == nil {
		m, err = e.loadAndSwap(fc, hash, time.Now())
	}
	if err != nil {
		return fmt.Errorf("%s: cannot load TLS material: %w", e.id, err)
	}
	e.lastSeen = hash
	if e.tel, err = newTelemetry(e); err != nil {
		return fmt.Errorf("%s: telemetry: %w", e.id, err)
	}
	e.logger.Info("Loaded TLS material", e.materialFields(m)...)

	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	w := newWatcher(e)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		w.run(ctx)
	}()
	return nil
}

// Shutdown stops the watcher and waits for it. Connections already made keep
// working; the exporters using them are shut down by the collector first.
func (e *certwatch) Shutdown(context.Context) error {
	if e.cancel != nil {
		e.cancel()
	}
	e.wg.Wait()
	e.mu.Lock()
	e.transports, e.conns = nil, map[*grpc.ClientConn]struct{}{}
	e.mu.Unlock()
	return e.tel.shutdown()
}

// check reads the files and, when their content changed (or content rejected
// as not valid yet has reached its NotBefore), validates and swaps in the new
// material; it reports whether it did. It runs on the watcher goroutine only.
func (e *certwatch) check(ctx context.Context) bool {
	fc, hash, settled, err := readSettled(e.cfg)
	if !settled {
		// A writer is still changing the files; its next event, or the
		// next poll, brings a check that reads them whole.
		e.logger.Debug("TLS files are changing; checking them again later")
		return false
	}
	if err != nil {
		// A missing file is usually the middle of a delete-then-recreate;
		// it still counts as one failure, because if nothing recreates the
		// file the operator must hear about it.
		hash = sha256.Sum256([]byte(err.Error()))
	}
	now := time.Now()
	if hash == e.lastSeen && (e.retryAt.IsZero() || now.Before(e.retryAt)) {
		return false
	}
	again, waitedFor := hash == e.lastSeen, e.retryAt
	e.lastSeen = hash
	e.setRetryAt(time.Time{})
	cur := e.current()
	if err == nil && cur != nil && hash == cur.hash {
		e.logger.Info("TLS material is back to the version in use")
		return false
	}
	var m *material
	if err == nil {
		m, err = e.loadAndSwap(fc, hash, now)
	}
	var notYet *notYetValidError
	if errors.As(err, &notYet) {
		e.setRetryAt(notYet.notBefore)
		if again && notYet.notBefore.Equal(waitedFor) {
			// Woken before NotBefore (the wall clock was stepped back):
			// the same rejection, already counted and logged.
			return false
		}
	}
	if err != nil {
		fields := []zap.Field{zap.Error(err)}
		if notYet != nil {
			fields = append(fields, zap.Time("retry_at", notYet.notBefore))
		}
		e.logger.Error("Rejected new TLS material; the last good material stays in use", fields...)
		// Counted after the log line, so that whoever sees the failure on
		// the counter (an alert, a test) finds its reason already logged.
		e.tel.reloaded(ctx, err)
		return false
	}
	// Counted once in use, so that a success seen on the counter means the
	// next handshake uses the new material.
	e.tel.reloaded(ctx, nil)
	e.logger.Info("Reloaded TLS material", e.materialFields(m)...)
	e.afterSwap()
	return true
}

func (e *certwatch) setRetryAt(at time.Time) {
	e.retryAt = at
	if at.IsZero() {
		e.pendingNotBefore.Store(0)
		return
	}
	e.pendingNotBefore.Store(at.Unix())
}

func (e *certwatch) closeIdleHTTP() {
	e.mu.Lock()
	transports := append([]*http.Transport(nil), e.transports...)
	e.mu.Unlock()
	for _, t := range transports {
		t.CloseIdleConnections()
	}
}

// afterSwap makes the next handshakes happen soon: idle HTTP connections are
// closed (busy ones are retired when a request is handed one, see
// versionTransport), and
// gRPC connections that are backing off after failed handshakes (a server whose
// CA we did not trust yet) retry at once instead of after up to two minutes.
// Established gRPC connections keep the identity they were made with until the
// server or the network ends them: grpc-go cannot retire a connection without
// failing the calls in flight on it.
func (e *certwatch) afterSwap() {
	e.closeIdleHTTP()
	e.mu.Lock()
	conns := make([]*grpc.ClientConn, 0, len(e.conns))
	for cc := range e.conns {
		conns = append(conns, cc)
	}
	e.mu.Unlock()
	for _, cc := range conns {
		cc.ResetConnectBackoff()
	}
}

func (e *certwatch) materialFields(m *material) []zap.Field {
	fields := []zap.Field{zap.String("ca_file", e.cfg.CAFile), zap.String("cert_file", e.cfg.CertFile)}
	if c := m.client; c != nil {
		fields = append(fields, zap.String("client_subject", c.subject), zap.String("client_serial", c.serial), zap.Time("client_not_after", c.notAfter))
	}
	return append(fields, zap.Int("ca_certificates", len(m.cas)))
}

// usableByExporter refuses an exporter the material of a server: its keypair
// would be offered to a backend as a client certificate.
func (e *certwatch) usableByExporter() error {
	if e.cfg.Server {
		return fmt.Errorf("%s has server: true: it watches a server's certificates (the receivers') and cannot be an exporter's middleware", e.id)
	}
	return nil
}

// GetGRPCClientOptions replaces the exporter's transport credentials: configgrpc
// appends middleware options after its own, and for grpc-go the last
// WithTransportCredentials wins. The interceptor only remembers the ClientConn
// (one atomic load per call) so a reload can reset its connect backoff.
func (e *certwatch) GetGRPCClientOptions(context.Context) ([]grpc.DialOption, error) {
	if err := e.usableByExporter(); err != nil {
		return nil, err
	}
	if e.current() == nil {
		return nil, fmt.Errorf("%s is not started", e.id)
	}
	var seen atomic.Pointer[grpc.ClientConn]
	remember := func(cc *grpc.ClientConn) {
		if seen.Load() == cc {
			return
		}
		seen.Store(cc)
		e.mu.Lock()
		e.conns[cc] = struct{}{}
		e.mu.Unlock()
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(&grpcCreds{e: e}),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			remember(cc)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			remember(cc)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}, nil
}

// grpcCreds hands every handshake to the credentials of the material current
// at that moment.
type grpcCreds struct{ e *certwatch }

func (g *grpcCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return g.e.current().creds.ClientHandshake(ctx, authority, raw)
}

func (g *grpcCreds) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("certwatch: client credentials cannot serve")
}

// Info names the server the way credentials.NewTLS does, so grpc-go derives the
// :authority from server_name_override exactly as with the exporter's own tls.
func (g *grpcCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls", SecurityVersion: "1.2", ServerName: g.e.cfg.ServerNameOverride} //nolint:staticcheck // SA1019: credentials.NewTLS still sets SecurityVersion "1.2"; Info matches it field for field
}

func (g *grpcCreds) Clone() credentials.TransportCredentials { return &grpcCreds{e: g.e} }

// OverrideServerName is unused by grpc-go; server_name_override is the way.
func (g *grpcCreds) OverrideServerName(string) error { return nil }
