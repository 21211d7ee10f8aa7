// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// TestNoRequestOnOldConnection: a request that is in flight across a reload
// (released by hand after it) keeps its connection busy, so closing idle
// connections at the reload misses it, and it goes back to the pool with the
// old identity afterwards. No request may be sent on it: the next requests
// present the new certificate, and none fails, over HTTP/1.1 and HTTP/2.
func TestNoRequestOnOldConnection(t *testing.T) {
	for _, proto := range []string{"HTTP/1.1", "HTTP/2.0"} {
		t.Run(proto, func(t *testing.T) {
			f, e := newStarted(t)
			srv := newRecordingServer(t, f.serverTLS(t), proto == "HTTP/2.0")
			client, _ := e.httpClient(t)

			require.NoError(t, srv.get(client, "/"))
			slow := make(chan error, 1)
			// No client timeout: the reload takes what it takes on a loaded machine.
			go func() { slow <- srv.get(&http.Client{Transport: client.Transport}, "/slow") }()
			select {
			case <-srv.slowStarted:
			case <-time.After(waitTimeout):
				t.Fatal("the slow request did not reach the server")
			}
			kp := f.clientCA.Client(t, testcerts.Options{CommonName: "relay-2"})
			testcerts.AtomicWrite(t, f.dir, f.files(f.serverCA.CertPEM, kp))
			e.waitReloads(t, resultSuccess, 1)
			e.waitClientSerial(t, kp.Serial())
			// A request meanwhile: net/http then keeps connections that
			// become idle instead of closing them (after its
			// CloseIdleConnections, it closes them until the next request).
			require.NoError(t, srv.get(client, "/"))
			close(srv.releaseSlow)
			require.NoError(t, <-slow)
			for range 3 {
				require.NoError(t, srv.get(client, "/"))
			}

			old, cur := f.client.Serial(), kp.Serial()
			assert.Equal(t, []seenRequest{
				{"/", old, proto}, {"/slow", old, proto},
				{"/", cur, proto}, {"/", cur, proto}, {"/", cur, proto}, {"/", cur, proto},
			}, srv.seen())
		})
	}
}

// recordingServer records the client certificate of every request that
// reaches it. A request for /slow waits until releaseSlow is closed.
type recordingServer struct {
	*httptest.Server
	slowStarted, releaseSlow chan struct{}
	mu                       sync.Mutex
	got                      []seenRequest
}

type seenRequest struct{ path, serial, proto string }

func newRecordingServer(t *testing.T, cfg *tls.Config, http2 bool) *recordingServer {
	t.Helper()
	s := &recordingServer{slowStarted: make(chan struct{}), releaseSlow: make(chan struct{})}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, seenRequest{r.URL.Path, r.TLS.PeerCertificates[0].SerialNumber.String(), r.Proto})
		s.mu.Unlock()
		if r.URL.Path == "/slow" {
			close(s.slowStarted)
			<-s.releaseSlow
		}
	}))
	s.EnableHTTP2 = http2
	s.TLS = cfg
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *recordingServer) get(c *http.Client, path string) error {
	resp, err := c.Get(s.URL + path)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &statusError{resp.Status}
	}
	return nil
}

func (s *recordingServer) seen() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.got...)
}
