// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
)

// sender does what deploy/fluent-bit/fluent-bit.yaml makes fluent-bit do (fluent-bit
// itself cannot be had here): tail /var/log/containers/*.log (CRI format, partial
// lines joined), put pod identity on each record as the attributes k8s.pod.name,
// k8s.namespace.name, k8s.pod.uid, k8s.container.name (plus stream), the line as the
// body, and POST each chunk as OTLP/HTTP protobuf, gzip, over mutual TLS with the
// client certificate in /fluent-bit/tls, checking the relay's name; a chunk is
// retried whole, without limit, until it is accepted (fluent-bit's retry_limit
// no_limits); 400 and 413 drop it, as fluent-bit does.
type sender struct {
	client *http.Client
	url    string

	mu      sync.Mutex
	offsets map[string]int64
	stats   struct{ Read, Acked, Requests, Retries, Dropped int }
}

// newSender is the client side of fluent-bit's opentelemetry output: mutual TLS with
// the certificate in $TLS_DIR, checking the relay's name, $MAX_IDLE connections kept.
func newSender() (*sender, error) {
	dir := envOr("TLS_DIR", "/fluent-bit/tls")
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s/ca.crt: no certificate in it", dir)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		return nil, err
	}
	host := envOr("RELAY_HOST", "otelcol-relay.otelcol-relay.svc")
	// The name checked on the relay's certificate, as fluent-bit's tls.vhost
	// (OTELCOL_RELAY_TLS_NAME): the host unless set.
	name := envOr("RELAY_TLS_NAME", host)
	return &sender{
		url: "https://" + host + ":4318/v1/logs",
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: name, MinVersion: tls.VersionTLS12},
			// net.keepalive_max_recycle: connections are redialed now and then.
			MaxIdleConnsPerHost: atoiOr("MAX_IDLE", 1), IdleConnTimeout: 30 * time.Second,
		}},
		offsets: map[string]int64{},
	}, nil
}

func send() error {
	s, err := newSender()
	if err != nil {
		return err
	}
	http.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(s.stats)
	})
	go func() {
		_ = (&http.Server{Addr: ":2020", ReadHeaderTimeout: 10 * time.Second}).ListenAndServe()
	}()
	glob := envOr("TAIL_PATH", "/var/log/containers/*.log")
	for {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			if strings.HasPrefix(filepath.Base(f), envOr("EXCLUDE_PREFIX", "log-sender")) {
				continue
			}
			s.flushFile(f)
		}
		time.Sleep(time.Second) // flush: 1
	}
}

// flushFile sends what f holds past its offset as one chunk, retried until it is
// accepted, and only then moves the offset.
func (s *sender) flushFile(f string) {
	pod, ns, container, ok := parseName(filepath.Base(f))
	if !ok {
		return
	}
	uid := podUID(f)
	fh, err := os.Open(f)
	if err != nil {
		return
	}
	defer fh.Close()
	off := s.offsets[f]
	if _, seekErr := fh.Seek(off, io.SeekStart); seekErr != nil {
		return
	}
	logs := plog.NewLogs()
	lrs := logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	rd := bufio.NewReader(fh)
	var partial strings.Builder
	read := int64(0)
	for lrs.Len() < 1000 {
		line, readErr := rd.ReadString('\n')
		if readErr != nil {
			break // an unterminated line is read again next time
		}
		read += int64(len(line))
		// <RFC3339Nano> <stream> <P|F> <message>
		parts := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 4)
		if len(parts) < 4 {
			continue
		}
		partial.WriteString(parts[3])
		if parts[2] == "P" {
			continue
		}
		ts, _ := time.Parse(time.RFC3339Nano, parts[0])
		lr := lrs.AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(ts))
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(time.Now()))
		lr.Body().SetStr(partial.String())
		partial.Reset()
		a := lr.Attributes()
		a.PutStr("stream", parts[1])
		a.PutStr("k8s.pod.name", pod)
		a.PutStr("k8s.namespace.name", ns)
		a.PutStr("k8s.pod.uid", uid)
		a.PutStr("k8s.container.name", container)
		off += read
		read = 0
	}
	if lrs.Len() == 0 {
		return
	}
	s.mu.Lock()
	s.stats.Read += lrs.Len()
	s.mu.Unlock()
	body, err := plogotlp.NewExportRequestFromLogs(logs).MarshalProto()
	if err != nil {
		return
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(body)
	_ = zw.Close()
	for wait := time.Second; ; wait = min(2*wait, 10*time.Second) {
		status, err := s.post(gz.Bytes())
		s.mu.Lock()
		s.stats.Requests++
		switch {
		case err == nil && status/100 == 2:
			s.stats.Acked += lrs.Len()
			s.offsets[f] = off
			s.mu.Unlock()
			return
		case err == nil && (status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge):
			s.stats.Dropped += lrs.Len()
			s.offsets[f] = off
			s.mu.Unlock()
			fmt.Fprintf(os.Stderr, "send: %s: HTTP %d, chunk of %d dropped\n", f, status, lrs.Len())
			return
		}
		s.stats.Retries++
		s.mu.Unlock()
		fmt.Fprintf(os.Stderr, "send: %s: status %d err %v, retrying in %s\n", f, status, err, wait)
		time.Sleep(wait)
	}
}

func (s *sender) post(gz []byte) (int, error) {
	return s.postCtx(context.Background(), gz, false)
}

// postCtx posts one gzipped chunk; closeConn drops the connection after the answer.
func (s *sender) postCtx(ctx context.Context, gz []byte, closeConn bool) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(gz))
	if err != nil {
		return 0, err
	}
	req.Close = closeConn
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("User-Agent", "Fluent-Bit")
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// parseName splits the kubelet's /var/log/containers name,
// <pod>_<namespace>_<container>-<container id>.log, as fluent-bit's kube_tag_prefix does.
func parseName(name string) (pod, ns, container string, ok bool) {
	name = strings.TrimSuffix(name, ".log")
	parts := strings.SplitN(name, "_", 3)
	if len(parts) != 3 {
		return "", "", "", false
	}
	i := strings.LastIndex(parts[2], "-")
	if i <= 0 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2][:i], true
}

// podUID reads the pod's UID from where the symlink points:
// /var/log/pods/<namespace>_<pod>_<uid>/<container>/<n>.log (fluent-bit's kubernetes
// filter asks the API for it; the path carries the same value).
func podUID(link string) string {
	target, err := os.Readlink(link)
	if err != nil {
		return ""
	}
	dir := filepath.Base(filepath.Dir(filepath.Dir(target)))
	if i := strings.LastIndex(dir, "_"); i >= 0 {
		return dir[i+1:]
	}
	return ""
}
