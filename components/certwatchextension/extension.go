package certwatchextension

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
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

// retireWindow is how long after a reload HTTP requests close their connection
// once their response is read. Closing idle connections alone would miss those
// busy at the reload: they return to the pool afterwards and would keep the old
// identity for as long as traffic keeps them alive. Any connection made before
// the reload is either idle at its end (and closed then) or served a request
// during it (and closed after that request), so none survives it, and no request
// is cut off. The cost is a handshake per request during the window.
const retireWindow = 5 * time.Second

// certwatch serves the current TLS material to the exporters that reference it.
//
// Only handshakes read the material (one atomic load); requests on an
// established connection never touch the extension.
type certwatch struct {
	cfg          *Config
	id           component.ID
	logger       *zap.Logger
	settings     component.TelemetrySettings
	minVersion   uint16
	debounce     time.Duration
	retireWindow time.Duration
	// watchFS can be turned off by tests to prove the poll alone suffices.
	watchFS bool

	// retiring is set for retireWindow after a reload (see retireWindow).
	retiring atomic.Bool

	cur      atomic.Pointer[material]
	loadedNs atomic.Int64
	tel      *telemetry

	// lastSeen identifies the last content (or read error) the watcher acted
	// on, so an unchanged file costs a hash and nothing else, and one bad
	// rotation counts and logs one failure however often it is polled.
	lastSeen [sha256.Size]byte

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
		cfg:          cfg,
		id:           set.ID,
		logger:       set.Logger,
		settings:     set.TelemetrySettings,
		minVersion:   tlsVersions[cfg.MinVersion],
		debounce:     defaultDebounce,
		watchFS:      true,
		retireWindow: retireWindow,
		conns:        map[*grpc.ClientConn]struct{}{},
	}
}

func (e *certwatch) current() *material { return e.cur.Load() }

func (e *certwatch) loadedAt() time.Time { return time.Unix(0, e.loadedNs.Load()) }

// Start loads the material and fails when it is missing or invalid: an exporter
// must not start with an identity it cannot present.
func (e *certwatch) Start(_ context.Context, _ component.Host) error {
	fc, hash, err := readFiles(e.cfg)
	if err == nil {
		var m *material
		m, err = buildMaterial(e.cfg, fc, hash, e.minVersion, time.Now())
		if err == nil {
			e.cur.Store(m)
			e.loadedNs.Store(time.Now().UnixNano())
			e.lastSeen = hash
		}
	}
	if err != nil {
		return fmt.Errorf("%s: cannot load TLS material: %w", e.id, err)
	}
	if e.tel, err = newTelemetry(e.settings.MeterProvider, e); err != nil {
		return fmt.Errorf("%s: telemetry: %w", e.id, err)
	}
	e.logger.Info("Loaded TLS material", e.materialFields(e.current())...)

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

// check reads the files and, when their content changed, validates and swaps
// in the new material; it reports whether it did. It runs on the watcher
// goroutine only.
func (e *certwatch) check(ctx context.Context) bool {
	fc, hash, err := readFiles(e.cfg)
	if err != nil {
		// A missing file is usually the middle of a delete-then-recreate;
		// it still counts as one failure, because if nothing recreates the
		// file the operator must hear about it.
		hash = sha256.Sum256([]byte(err.Error()))
	}
	if hash == e.lastSeen {
		return false
	}
	e.lastSeen = hash
	cur := e.current()
	if err == nil && cur != nil && hash == cur.hash {
		e.logger.Info("TLS material is back to the version in use")
		return false
	}
	var m *material
	if err == nil {
		m, err = buildMaterial(e.cfg, fc, hash, e.minVersion, time.Now())
	}
	e.tel.reloaded(ctx, err)
	if err != nil {
		e.logger.Error("Rejected new TLS material; the last good material stays in use", zap.Error(err))
		return false
	}
	e.cur.Store(m)
	e.loadedNs.Store(time.Now().UnixNano())
	e.logger.Info("Reloaded TLS material", e.materialFields(m)...)
	e.retiring.Store(true)
	e.afterSwap()
	return true
}

// endRetire ends the retire window: what is idle now was made before or during
// it, and is closed.
func (e *certwatch) endRetire() {
	e.retiring.Store(false)
	e.closeIdleHTTP()
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
// closed (busy ones are retired after their request, see retireWindow), and
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
	for _, c := range m.certs {
		if c.role == "client" {
			fields = append(fields, zap.String("client_subject", c.subject), zap.String("client_serial", c.serial), zap.Time("client_not_after", c.notAfter))
		}
	}
	cas := 0
	for _, c := range m.certs {
		if c.role == "ca" {
			cas++
		}
	}
	return append(fields, zap.Int("ca_certificates", cas))
}

// GetGRPCClientOptions replaces the exporter's transport credentials: configgrpc
// appends middleware options after its own, and for grpc-go the last
// WithTransportCredentials wins. The interceptor only remembers the ClientConn
// (one atomic load per call) so a reload can reset its connect backoff.
func (e *certwatch) GetGRPCClientOptions(context.Context) ([]grpc.DialOption, error) {
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
	return credentials.ProtocolInfo{SecurityProtocol: "tls", SecurityVersion: "1.2", ServerName: g.e.cfg.ServerNameOverride}
}

func (g *grpcCreds) Clone() credentials.TransportCredentials { return &grpcCreds{e: g.e} }

// OverrideServerName is unused by grpc-go; server_name_override is the way.
func (g *grpcCreds) OverrideServerName(string) error { return nil }

// GetHTTPRoundTripper takes over the TLS handshakes of the exporter's
// *http.Transport. confighttp applies middlewares from the last to the first,
// so only the last one in the list receives the bare transport.
func (e *certwatch) GetHTTPRoundTripper(context.Context) (extensionmiddleware.WrapHTTPRoundTripperFunc, error) {
	if e.current() == nil {
		return nil, fmt.Errorf("%s is not started", e.id)
	}
	return func(_ context.Context, rt http.RoundTripper) (http.RoundTripper, error) {
		t, ok := rt.(*http.Transport)
		if !ok {
			return nil, fmt.Errorf("%s must be the last entry of the exporter's middlewares: it configures the TLS of the exporter's *http.Transport, but was given a %T", e.id, rt)
		}
		e.install(t)
		return &retiringTransport{e: e, t: t}, nil
	}, nil
}

// retiringTransport asks net/http to close each connection after its request
// while a reload's retire window is open; otherwise it adds one atomic load.
type retiringTransport struct {
	e *certwatch
	t *http.Transport
}

func (r *retiringTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.e.retiring.Load() && !req.Close {
		req = req.Clone(req.Context())
		req.Close = true
	}
	return r.t.RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the transport.
func (r *retiringTransport) CloseIdleConnections() { r.t.CloseIdleConnections() }

// install makes every TLS handshake of t use the current material.
//
// The direct path is DialTLSContext, which builds a tls.Config from the current
// material per connection, with the dialed host as the name to verify (IP
// endpoints included). Through an HTTPS proxy, net/http does the handshake
// itself from TLSClientConfig, so that config verifies in VerifyConnection
// against the current roots, by the SNI name or server_name_override.
func (e *certwatch) install(t *http.Transport) {
	var nextProtos []string
	if t.TLSClientConfig != nil {
		nextProtos = t.TLSClientConfig.NextProtos
	}
	override := e.cfg.ServerNameOverride
	t.TLSClientConfig = &tls.Config{
		MinVersion: e.minVersion,
		ServerName: override,
		NextProtos: nextProtos,
		// Verified in VerifyConnection, against the roots current at the
		// handshake rather than those of when this config was made.
		InsecureSkipVerify: true, //nolint:gosec
		VerifyConnection: func(cs tls.ConnectionState) error {
			name := override
			if name == "" {
				name = cs.ServerName
			}
			return e.current().verifyPeer(cs, name)
		},
		GetClientCertificate: func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return e.current().clientCertificate(cri)
		},
	}
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	handshakeTimeout := t.TLSHandshakeTimeout
	t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		name := override
		if name == "" {
			if name, _, err = net.SplitHostPort(addr); err != nil {
				raw.Close()
				return nil, err
			}
		}
		// NextProtos is read here, not at install: net/http adds "h2" to
		// TLSClientConfig once, before its first dial.
		conn := tls.Client(raw, e.current().tlsConfig(e.minVersion, name, t.TLSClientConfig.NextProtos))
		hctx := ctx
		if handshakeTimeout > 0 {
			var cancel context.CancelFunc
			hctx, cancel = context.WithTimeout(ctx, handshakeTimeout)
			defer cancel()
		}
		if err := conn.HandshakeContext(hctx); err != nil {
			raw.Close()
			return nil, err
		}
		return conn, nil
	}
	e.mu.Lock()
	e.transports = append(e.transports, t)
	e.mu.Unlock()
}
