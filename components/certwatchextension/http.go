// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/extension/extensionmiddleware"
)

// GetHTTPRoundTripper takes over the TLS handshakes of the exporter's
// *http.Transport. confighttp applies middlewares from the last to the first,
// so only the last one in the list receives the bare transport.
func (e *certwatch) GetHTTPRoundTripper(context.Context) (extensionmiddleware.WrapHTTPRoundTripperFunc, error) {
	if err := e.usableByExporter(); err != nil {
		return nil, err
	}
	if e.current() == nil {
		return nil, fmt.Errorf("%s is not started", e.id)
	}
	return func(_ context.Context, rt http.RoundTripper) (http.RoundTripper, error) {
		t, ok := rt.(*http.Transport)
		if !ok {
			return nil, fmt.Errorf("%s must be the last entry of the exporter's middlewares: it configures the TLS of the exporter's *http.Transport, but was given a %T", e.id, rt)
		}
		e.install(t)
		return &versionTransport{e: e, t: t}, nil
	}, nil
}

// taggedConn is the connection under TLS, tagged with the material its
// handshake used.
type taggedConn struct {
	net.Conn
	m atomic.Pointer[material]
}

// versionTransport sends no request on a connection made with material older
// than the one in use. Closing idle connections at a reload misses those busy
// then: they return to the pool afterwards with the old identity. So every
// request looks at the connection net/http hands it (httptrace's GotConn,
// before anything is written) and turns an old one away: an HTTP/1 connection
// is closed, an HTTP/2 one (other requests may still be in flight on it) is
// marked not to be reused and the request fails before its headers are
// written. The request is then tried again (its body rewound), and net/http
// uses or dials a connection with the current material. No request is cut off.
type versionTransport struct {
	e *certwatch
	t *http.Transport
}

// attempt is one try of a request; GotConn and the handshake callbacks find
// it in the request's context.
type attempt struct {
	e   *certwatch
	req *http.Request
	// resend: the request cannot be sent again (a body without GetBody) or
	// was turned away maxRefusals times. An old connection then carries it,
	// and is retired after it.
	resend  bool
	refused atomic.Bool
	// handshake is the material current when net/http started a handshake
	// of its own (through an HTTP proxy), raw the connection under it.
	handshake atomic.Pointer[material]
	raw       atomic.Pointer[taggedConn]
}

type attemptKey struct{}

// refusedHeader carries an invalid value that makes net/http's HTTP/2
// transport fail a refused request before writing it.
const refusedHeader = "Certwatch-Refused"

func attemptFrom(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

func (r *versionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rewindable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	for n := 0; ; n++ {
		a := &attempt{e: r.e, resend: !rewindable || n == maxRefusals}
		ctx := httptrace.WithClientTrace(context.WithValue(req.Context(), attemptKey{}, a), &httptrace.ClientTrace{
			GotConn:           a.gotConn,
			TLSHandshakeStart: a.handshakeStart,
		})
		a.req = req.Clone(ctx)
		if n > 0 && req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			a.req.Body = body
		}
		resp, err := r.t.RoundTrip(a.req)
		if err != nil {
			if a.refused.Load() && req.Context().Err() == nil {
				continue
			}
			return nil, err
		}
		resp.Request = req
		return resp, nil
	}
}

// gotConn turns the try away from a connection made with older material.
func (a *attempt) gotConn(info httptrace.GotConnInfo) {
	tc, ok := info.Conn.(*tls.Conn)
	if !ok {
		return
	}
	c, ok := tc.NetConn().(*taggedConn)
	if !ok {
		return
	}
	if m := c.m.Load(); m == nil || m == a.e.current() {
		return
	}
	// The headers are the try's own (cloned) map, which net/http reads after
	// GotConn, on this goroutine or one it starts: both protocols retire the
	// connection after a "Connection: close" request.
	if a.resend {
		a.req.Header.Set("Connection", "close")
		return
	}
	a.refused.Store(true)
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		// "Connection: close" marks the connection not to be reused when
		// the stream is added; the invalid value then fails the stream
		// when its headers are encoded, which net/http validates before it
		// writes anything. Cancelling the context instead would race: net/http
		// may give up before it marks the connection.
		a.req.Header.Set("Connection", "close")
		a.req.Header.Set(refusedHeader, "\x00")
		return
	}
	// HTTP/1 carries one request at a time, so the connection is this
	// request's alone: net/http finds it closed before writing and tries again.
	_ = tc.Close()
}

// handshakeStart notes the material current when net/http starts a handshake
// from TLSClientConfig (through a proxy), for the check in install's
// GetClientCertificate, and tags the connection with it.
func (a *attempt) handshakeStart() {
	m := a.e.current()
	a.handshake.Store(m)
	if c := a.raw.Load(); c != nil {
		c.m.Store(m)
	}
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the transport.
func (r *versionTransport) CloseIdleConnections() { r.t.CloseIdleConnections() }

// errMaterialChanged fails a handshake that would pair the CA of one version
// with the client certificate of another; the request is tried again.
var errMaterialChanged = errors.New("certwatch: the TLS material changed during the handshake; trying again with the new material")

// install makes every TLS handshake of t use one version of the material, the
// one current when the handshake starts, and tags its connection with it.
//
// The direct path is DialTLSContext, which builds a tls.Config from the current
// material per connection, with the dialed host as the name to verify (IP
// endpoints included). Through an HTTP proxy, net/http does the handshake
// itself from TLSClientConfig, so that config verifies in VerifyConnection
// against the current roots, by the SNI name or server_name_override, and
// GetClientCertificate refuses to go on if the material changed since the
// handshake started (the two callbacks share no state of their own).
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
		InsecureSkipVerify: true, //nolint:gosec // G402: the chain and name are verified in VerifyConnection below
		VerifyConnection: func(cs tls.ConnectionState) error {
			name := override
			if name == "" {
				name = cs.ServerName
			}
			return e.current().verifyPeer(cs, name)
		},
		GetClientCertificate: func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			m := e.current()
			if a := attemptFrom(cri.Context()); a != nil {
				if at := a.handshake.Load(); at != nil && at != m {
					a.refused.Store(true)
					return nil, errMaterialChanged
				}
			}
			return m.clientCertificate(cri)
		},
	}
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	// Connections net/http handshakes itself (through a proxy) are tagged
	// when their handshake starts.
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := &taggedConn{Conn: raw}
		if a := attemptFrom(ctx); a != nil {
			a.raw.Store(c)
		}
		return c, nil
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
		m := e.current()
		c := &taggedConn{Conn: raw}
		c.m.Store(m)
		// NextProtos is read here, not at install: net/http adds "h2" to
		// TLSClientConfig once, before its first dial.
		conn := tls.Client(c, m.tlsConfig(e.minVersion, name, t.TLSClientConfig.NextProtos))
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
