// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// TestHandshakeUsesOneVersion: through an HTTP proxy, net/http handshakes
// itself, and certwatch sees the server's certificate (VerifyConnection) and
// is asked for the client certificate (GetClientCertificate) at two moments.
// A reload between the two must not pair the CA that verified the server with
// the client certificate of the new version. The proxy holds the server's TLS
// 1.2 flight after its ServerKeyExchange message (a TLS 1.2 client verifies
// the certificate once it has read the message after it) until the client
// waits for more; then new material is loaded, whose CA does not trust this
// server. The server must not get a request presenting the new certificate.
func TestHandshakeUsesOneVersion(t *testing.T) {
	f := newFixture(t)
	f.writeValid(t)
	// By name: through a proxy, net/http verifies an IP endpoint by an empty
	// SNI name, which certwatch refuses (not what this test is about).
	f.cfg.ServerNameOverride = "localhost"
	e := startExt(t, f.cfg)
	cfg := f.serverTLS(t)
	cfg.MaxVersion = tls.VersionTLS12 // its handshake messages can be told apart on the wire
	srv := newRecordingServer(t, cfg, false)
	p := newPausingProxy(t)

	// The client's connection to the proxy tells when the client waits for
	// more than the proxy has sent before it paused: it has verified the
	// server's certificate by then.
	waiting := make(chan struct{})
	var once sync.Once
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: p.addr})
	dial := (&net.Dialer{}).DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &readCounter{Conn: c, before: func(read int64) {
			if sent := p.sent.Load(); sent > 0 && read == sent {
				once.Do(func() { close(waiting) })
			}
		}}, nil
	}
	wrap, err := e.GetHTTPRoundTripper(context.Background())
	require.NoError(t, err)
	rt, err := wrap(context.Background(), tr)
	require.NoError(t, err)
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: rt}

	done := make(chan error, 1)
	go func() { done <- srv.get(client, "/") }()
	select {
	case <-waiting:
	case <-time.After(waitTimeout):
		t.Fatal("the client did not get the server's certificate through the proxy")
	}
	otherCA := testcerts.NewCA(t, "server-ca-2")
	kp := f.clientCA.Client(t, testcerts.Options{CommonName: "relay-2"})
	testcerts.AtomicWrite(t, f.dir, f.files(otherCA.CertPEM, kp))
	e.waitReloads(t, resultSuccess, 1)
	e.waitClientSerial(t, kp.Serial())
	close(p.resume)

	err = <-done
	for _, r := range srv.seen() {
		assert.NotEqual(t, kp.Serial(), r.serial, "the server got the new certificate from a client that verified it with the old CA")
	}
	// With one version per handshake, the new one does not trust this server.
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate signed by unknown authority")
}

// pausingProxy is an HTTP CONNECT proxy. In its first tunnel it forwards the
// server's TLS records one by one and holds them after the server's
// ServerKeyExchange message until resume is closed; sent is then the number of
// bytes it has sent the client.
type pausingProxy struct {
	addr   string
	sent   atomic.Int64
	resume chan struct{}
	first  atomic.Bool
}

func newPausingProxy(t *testing.T) *pausingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &pausingProxy{addr: ln.Addr().String(), resume: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		select {
		case <-p.resume:
		default:
			close(p.resume)
		}
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.serve(c)
			}()
		}
	}()
	return p
}

func (p *pausingProxy) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil || req.Method != http.MethodConnect {
		return
	}
	up, err := net.Dial("tcp", req.Host)
	if err != nil {
		return
	}
	defer up.Close()
	const established = "HTTP/1.1 200 Connection established\r\n\r\n"
	if _, err := io.WriteString(c, established); err != nil {
		return
	}
	go func() {
		_, _ = io.Copy(up, br)
		up.Close()
	}()
	if p.first.CompareAndSwap(false, true) {
		if !p.forwardUntilKeyExchange(c, up, int64(len(established))) {
			return
		}
		<-p.resume
	}
	_, _ = io.Copy(c, up)
}

// forwardUntilKeyExchange forwards the server's records up to and including the
// one that holds its ServerKeyExchange message, and notes how many bytes the client
// will have got then before it sends that record.
func (p *pausingProxy) forwardUntilKeyExchange(c, up net.Conn, sent int64) bool {
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(up, hdr[:]); err != nil {
			return false
		}
		body := make([]byte, binary.BigEndian.Uint16(hdr[3:]))
		if _, err := io.ReadFull(up, body); err != nil {
			return false
		}
		sent += int64(len(hdr) + len(body))
		const handshake, serverKeyExchange = 22, 12
		last := hdr[0] == handshake && len(body) > 0 && body[0] == serverKeyExchange
		if last {
			p.sent.Store(sent)
		}
		if _, err := c.Write(append(hdr[:], body...)); err != nil || last {
			return err == nil
		}
	}
}

// readCounter calls before with the number of bytes read so far at the start
// of every Read.
type readCounter struct {
	net.Conn
	read   int64
	before func(read int64)
}

func (c *readCounter) Read(b []byte) (int, error) {
	c.before(c.read)
	n, err := c.Conn.Read(b)
	c.read += int64(n)
	return n, err
}
