// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// StalledUpload is an OTLP/HTTP request whose sender stopped mid-body: the
// headers announce size bytes, 64 KiB of them were sent, and the connection
// stays open (a fluent-bit whose node died, or a slow-loris client).
type StalledUpload struct {
	conn *tls.Conn
}

// StartStalledUpload dials addr with TLS and starts the upload.
func StartStalledUpload(t tb.T, addr string, cfg *tls.Config, size int) *StalledUpload {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatalf("stalled upload to %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "POST /v1/logs HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-protobuf\r\nContent-Length: %d\r\n\r\n", addr, size); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(make([]byte, min(size/2, 64<<10))); err != nil {
		t.Fatal(err)
	}
	return &StalledUpload{conn: c}
}

// Answer waits up to timeout for the server's response and returns its status
// and Retry-After header.
func (u *StalledUpload) Answer(timeout time.Duration) (int, string, error) {
	_ = u.conn.SetReadDeadline(time.Now().Add(timeout))
	resp, err := http.ReadResponse(bufio.NewReader(u.conn), nil)
	if err != nil {
		return 0, "", err
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After"), nil
}
