// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// HTTPClient posts OTLP/HTTP requests, optionally over TLS.
type HTTPClient struct {
	BaseURL string // e.g. http://127.0.0.1:4318
	Client  *http.Client
	Header  http.Header
}

// NewHTTPClient returns a client for baseURL; tlsCfg may be nil.
func NewHTTPClient(baseURL string, tlsCfg *tls.Config) *HTTPClient {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// A copy: this transport negotiates HTTP/2 and adds "h2" to its config's
	// NextProtos, which on a config shared with an HTTP/1.1-only client (the
	// Sender, as fluent-bit) makes the server pick h2 for that client's next
	// connection, which then fails ("bogus greeting").
	tr.TLSClientConfig = tlsCfg.Clone()
	return &HTTPClient{BaseURL: baseURL, Client: &http.Client{Transport: tr, Timeout: 30 * time.Second}, Header: http.Header{}}
}

// Post sends body to path and returns the status code and response body.
func (c *HTTPClient) Post(ctx context.Context, path string, body []byte, contentType, contentEncoding string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, vs := range c.Header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", contentType)
	if contentEncoding != "" {
		req.Header.Set("Content-Encoding", contentEncoding)
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, respBody, err
}

// SendLogs encodes ld and posts it to /v1/logs; any status but 200 is an error.
func (c *HTTPClient) SendLogs(ctx context.Context, ld plog.Logs, enc otlpfixture.Encoding) error {
	body, ct, ce, err := otlpfixture.EncodeLogs(ld, enc)
	if err != nil {
		return err
	}
	code, resp, err := c.Post(ctx, "/v1/logs", body, ct, ce)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("POST /v1/logs: %d %s", code, bytes.TrimSpace(resp))
	}
	return nil
}

// DialGRPC connects to addr, with TLS when tlsCfg is not nil.
func DialGRPC(addr string, tlsCfg *tls.Config) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	return grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
}

// Get reads url's body with a plain client that gives up after timeout; an
// answer other than 200 is an error naming the URL, the status and the body.
func Get(url string, timeout time.Duration) ([]byte, error) {
	resp, err := (&http.Client{Timeout: timeout}).Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(b))
	}
	return b, nil
}
