// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"io"
	"net"
	"sync"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// RoundRobinProxy is a TCP proxy that sends each new connection to the next
// backend in turn and never moves a connection once made: what kube-proxy does
// for a Service. TLS passes through untouched.
type RoundRobinProxy struct {
	Addr string
	ln   net.Listener

	mu       sync.Mutex
	backends []string
	next     int
	conns    map[string]int // connections made per backend
	wg       sync.WaitGroup
	open     map[net.Conn]struct{}
}

// NewRoundRobinProxy listens on a free loopback port; it is closed when the
// test ends.
func NewRoundRobinProxy(t tb.T, backends ...string) *RoundRobinProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &RoundRobinProxy{Addr: ln.Addr().String(), ln: ln, backends: backends, conns: map[string]int{}, open: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.Close)
	return p
}

// SetBackends replaces the endpoints new connections go to (a scale-up, or an
// endpoint leaving the Service); existing connections stay where they are.
func (p *RoundRobinProxy) SetBackends(backends ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends = append([]string(nil), backends...)
}

// Connections returns how many connections went to each backend so far.
func (p *RoundRobinProxy) Connections() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.conns {
		out[k] = v
	}
	return out
}

func (p *RoundRobinProxy) pick() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.backends) == 0 {
		return ""
	}
	b := p.backends[p.next%len(p.backends)]
	p.next++
	p.conns[b]++
	return b
}

func (p *RoundRobinProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.relay(c)
	}
}

func (p *RoundRobinProxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.open[c] = struct{}{}
	} else {
		delete(p.open, c)
	}
}

func (p *RoundRobinProxy) relay(client net.Conn) {
	defer p.wg.Done()
	defer client.Close()
	backend := p.pick()
	if backend == "" {
		return // no endpoint: the connection is refused (closed)
	}
	server, err := net.Dial("tcp", backend)
	if err != nil {
		return // like a connection reset: the sender retries
	}
	defer server.Close()
	p.track(client, true)
	p.track(server, true)
	defer p.track(client, false)
	defer p.track(server, false)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Pass the half-close on, so each side sees the other end.
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
}

// Close stops accepting and closes every proxied connection.
func (p *RoundRobinProxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
