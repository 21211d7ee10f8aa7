// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// familyType is the type of a family as the metadata API reports it, or
// model.MetricTypeUnknown for "untyped" and whatever a future server invents.
// gaugehistogram, info and stateset are kept as reported: OTLP has no faithful
// equivalent for them here, so their series stay gauges.
func familyType(t model.MetricType) model.MetricType {
	switch t {
	case model.MetricTypeCounter, model.MetricTypeGauge, model.MetricTypeHistogram, model.MetricTypeSummary,
		model.MetricTypeGaugeHistogram, model.MetricTypeInfo, model.MetricTypeStateset:
		return t
	}
	return model.MetricTypeUnknown
}

// familyMeta is what the processor knows about one family name.
type familyMeta struct {
	typ  model.MetricType
	help string
	unit string
	// ambiguous is set when targets disagree on the family's type (two jobs
	// exposing one name as a counter and as a gauge): no single answer is right,
	// so the family is left as it arrived.
	ambiguous bool
}

// metadataSnapshot is one successful read of the metadata API. It is immutable
// once built, so batches read it without locking.
type metadataSnapshot struct {
	families  map[string]familyMeta
	ambiguous []string // sorted names, for logs
	fetched   time.Time
}

// metadataEntry mirrors one element of the API's per-name array.
type metadataEntry struct {
	Type model.MetricType `json:"type"`
	Help string           `json:"help"`
	Unit string           `json:"unit"`
}

type metadataResponse struct {
	Status    string                     `json:"status"`
	Data      map[string][]metadataEntry `json:"data"`
	ErrorType string                     `json:"errorType"`
	Error     string                     `json:"error"`
}

// parseMetadata decodes a /api/v1/metadata body. Anything that is not a
// successful API answer is an error that says what was wrong with it.
func parseMetadata(body []byte, fetched time.Time) (*metadataSnapshot, error) {
	var r metadataResponse
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("malformed metadata response (%d bytes): not the JSON of /api/v1/metadata: %w", len(body), err)
	}
	if dec.More() {
		return nil, fmt.Errorf("malformed metadata response (%d bytes): trailing data after the JSON object", len(body))
	}
	if r.Status != "success" {
		if r.Status == "" {
			return nil, fmt.Errorf("malformed metadata response (%d bytes): no \"status\" field; is the endpoint a Prometheus server?", len(body))
		}
		return nil, fmt.Errorf("metadata API answered status %q (%s: %s)", r.Status, r.ErrorType, truncate(r.Error, 200))
	}
	if r.Data == nil {
		return nil, errors.New(`malformed metadata response: status "success" but no "data" object`)
	}
	s := &metadataSnapshot{families: make(map[string]familyMeta, len(r.Data)), fetched: fetched}
	for name, entries := range r.Data {
		if name == "" || len(entries) == 0 {
			continue
		}
		m := familyMeta{typ: familyType(entries[0].Type), help: entries[0].Help, unit: entries[0].Unit}
		for _, e := range entries[1:] {
			if familyType(e.Type) != m.typ {
				m.ambiguous = true
				break
			}
		}
		if m.ambiguous {
			s.ambiguous = append(s.ambiguous, name)
		}
		s.families[name] = m
	}
	sort.Strings(s.ambiguous)
	return s, nil
}

// fetcher reads the metadata API with the configured client.
type fetcher struct {
	client    *http.Client
	url       string
	tokenFile string
	timeout   time.Duration
	maxBytes  int64
}

// redactedURL is safe for logs and errors even if the endpoint carries userinfo.
func (f *fetcher) redactedURL() string {
	u, err := url.Parse(f.url)
	if err != nil {
		return "<unparsable metadata URL>"
	}
	return u.Redacted()
}

func (f *fetcher) fetch(ctx context.Context, now time.Time) (*metadataSnapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("metadata request for %s: %w", f.redactedURL(), err)
	}
	req.Header.Set("Accept", "application/json")
	if f.tokenFile != "" {
		b, rerr := os.ReadFile(f.tokenFile)
		if rerr != nil {
			return nil, fmt.Errorf("bearer_token_file %q: %w", f.tokenFile, rerr)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return nil, fmt.Errorf("bearer_token_file %q: file is empty", f.tokenFile)
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		// The client's error names the URL already; make sure it is the redacted one.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("GET %s: %w", f.redactedURL(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return nil, fmt.Errorf("GET %s: HTTP %s: %q", f.redactedURL(), resp.Status, truncate(string(snippet), 200))
	}
	if resp.ContentLength > f.maxBytes {
		return nil, fmt.Errorf("GET %s: response of %d bytes exceeds max_response_size (%d bytes); refusing it", f.redactedURL(), resp.ContentLength, f.maxBytes)
	}
	// The limit applies to the decoded body: the transport has already undone
	// any gzip it negotiated, so a compressed bomb is cut off here too.
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading body: %w", f.redactedURL(), err)
	}
	if int64(len(body)) > f.maxBytes {
		return nil, fmt.Errorf("GET %s: response exceeds max_response_size (%d bytes); refusing it", f.redactedURL(), f.maxBytes)
	}
	s, err := parseMetadata(body, now)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", f.redactedURL(), err)
	}
	return s, nil
}

// sameOriginRedirectsOnly is the metadata client's redirect policy. The bearer
// token is set on the request, and Go's client copies it to a redirect target
// with the same host name whatever the scheme and port (net/http
// shouldCopyHeaderOnRedirect), so https://prometheus:9090 answering 302 to
// http://prometheus:8080 would send the token in clear text; to another host it
// is dropped, but the request still goes there. A redirect is followed only to
// the same scheme, host and port.
func sameOriginRedirectsOnly(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("redirected to %s, another origin than %s://%s: not followed, so the bearer token is only ever sent to the configured endpoint",
			req.URL.Redacted(), first.Scheme, first.Host)
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…(" + strconv.Itoa(len(s)-n) + " more bytes)"
}
