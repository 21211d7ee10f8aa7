// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// record is one log record as the backend got it: its body and the attributes of
// its resource and of itself, flattened to strings.
type record struct {
	Body     string            `json:"body"`
	Resource map[string]string `json:"resource"`
	Attrs    map[string]string `json:"attrs"`
}

// metricSeen is one metric name with the resource attributes it came with.
type metricSeen struct {
	Name     string            `json:"name"`
	Resource map[string]string `json:"resource"`
}

type store struct {
	mu      sync.Mutex
	logs    []record
	metrics map[string]metricSeen // name + pod: the last one
	reqs    int
}

// backend serves OTLP/HTTP on :4318 with mutual TLS (client certificates from
// $CA_FILE) and what it received as JSON on plain :8080 (/logs, /metrics), for the
// test to read from the node.
func backend() error {
	caPEM, err := os.ReadFile(envOr("CA_FILE", "/tls/ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("CA_FILE: no certificate in it")
	}
	cert, err := tls.LoadX509KeyPair(envOr("CERT_FILE", "/tls/tls.crt"), envOr("KEY_FILE", "/tls/tls.key"))
	if err != nil {
		return err
	}
	s := &store{metrics: map[string]metricSeen{}}
	otlp := http.NewServeMux()
	otlp.HandleFunc("/v1/logs", s.handleLogs)
	otlp.HandleFunc("/v1/metrics", s.handleMetrics)
	otlp.HandleFunc("/v1/traces", func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) })
	srv := &http.Server{Addr: ":4318", Handler: otlp, TLSConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	}}
	status := http.NewServeMux()
	status.HandleFunc("/logs", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(s.logs)
	})
	status.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		out := make([]metricSeen, 0, len(s.metrics))
		for _, m := range s.metrics {
			out = append(out, m)
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	// Forget the metrics so far: the test then waits for ones sent after a change.
	status.HandleFunc("/metrics/reset", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		clear(s.metrics)
	})
	go func() { _ = http.ListenAndServe(":8080", status) }()
	fmt.Fprintln(os.Stderr, "backend: OTLP/HTTP with mutual TLS on :4318, status on :8080")
	return srv.ListenAndServeTLS("", "")
}

func body(r *http.Request) ([]byte, error) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		rd = zr
	}
	return io.ReadAll(rd)
}

func (s *store) handleLogs(w http.ResponseWriter, r *http.Request) {
	b, err := body(r)
	req := plogotlp.NewExportRequest()
	if err == nil {
		err = req.UnmarshalProto(b)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []record
	rls := req.Logs().ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		res := flat(rls.At(i).Resource().Attributes().AsRaw())
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				got = append(got, record{Body: lr.Body().AsString(), Resource: res, Attrs: flat(lr.Attributes().AsRaw())})
			}
		}
	}
	s.mu.Lock()
	s.logs = append(s.logs, got...)
	s.reqs++
	s.mu.Unlock()
	reply(w, plogotlp.NewExportResponse().MarshalProto)
}

func (s *store) handleMetrics(w http.ResponseWriter, r *http.Request) {
	b, err := body(r)
	req := pmetricotlp.NewExportRequest()
	if err == nil {
		err = req.UnmarshalProto(b)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rms := req.Metrics().ResourceMetrics()
	s.mu.Lock()
	for i := 0; i < rms.Len(); i++ {
		res := flat(rms.At(i).Resource().Attributes().AsRaw())
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				name := ms.At(k).Name()
				s.metrics[name+"\x00"+res["k8s.pod.name"]+"\x00"+res["k8s.node.name"]] = metricSeen{Name: name, Resource: res}
			}
		}
	}
	s.mu.Unlock()
	reply(w, pmetricotlp.NewExportResponse().MarshalProto)
}

func reply(w http.ResponseWriter, marshal func() ([]byte, error)) {
	out, err := marshal()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

func flat(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}
