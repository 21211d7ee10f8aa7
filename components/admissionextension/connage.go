// SPDX-License-Identifier: Apache-2.0

package admissionextension

import (
	"sync"
	"time"
)

// connAges remembers when each HTTP connection (by the client's address, which
// is unique among open connections) was first seen, so that the first request
// after max_connection_age is answered with Connection: close. kube-proxy
// balances per connection, and fluent-bit keeps its connections for as long as
// the server does: without this, replicas added by a scale-up get no traffic.
//
// The receiver's server gives a middleware no per-connection hook, hence the
// address. A closed connection's address can come back for a new connection
// from the same client: that connection is then recycled early, once, which
// costs one reconnect and loses nothing.
type connAges struct {
	maxAge time.Duration

	mu        sync.Mutex
	seen      map[string]connSeen
	lastSweep time.Time
}

type connSeen struct{ first, last time.Time }

func newConnAges(maxAge time.Duration) *connAges {
	return &connAges{maxAge: maxAge, seen: map[string]connSeen{}}
}

// expired records a request from remote at now and reports whether its
// connection is older than maxAge; if so the connection is forgotten, because
// the answer closes it.
func (c *connAges) expired(remote string, now time.Time) bool {
	if c.maxAge <= 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(now)
	s, ok := c.seen[remote]
	if !ok {
		c.seen[remote] = connSeen{first: now, last: now}
		return false
	}
	if now.Sub(s.first) >= c.maxAge {
		delete(c.seen, remote)
		return true
	}
	s.last = now
	c.seen[remote] = s
	return false
}

// sweep forgets connections idle for maxAge: most are closed (the server's idle
// timeout, or the client went away); one that is still open starts a new age
// at its next request, so an idle connection is recycled late, never lost.
func (c *connAges) sweep(now time.Time) {
	if now.Sub(c.lastSweep) < c.maxAge {
		return
	}
	c.lastSweep = now
	for k, s := range c.seen {
		if now.Sub(s.last) >= c.maxAge {
			delete(c.seen, k)
		}
	}
}

func (c *connAges) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}
