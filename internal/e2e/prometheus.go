// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// PrometheusBinEnv points the tests at a Prometheus server binary; without it
// the one on PATH (Debian's `prometheus` package installs /usr/bin/prometheus)
// is used.
const PrometheusBinEnv = "PROMETHEUS_BIN"

// PrometheusInstallHint is what a missing binary's error tells the reader to run.
const PrometheusInstallHint = "apt-get update && apt-get install -y prometheus"

// PrometheusBinary finds the Prometheus server binary.
func PrometheusBinary() (string, error) {
	if p := os.Getenv(PrometheusBinEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%q: %w", PrometheusBinEnv, p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no prometheus binary on PATH and %s is unset; install it with: %s", PrometheusBinEnv, PrometheusInstallHint)
}

// PrometheusOptions configures a test Prometheus server.
type PrometheusOptions struct {
	// Targets are host:port addresses scraped at /metrics under job JobName.
	Targets []string
	// JobName defaults to "demo".
	JobName string
	// Rules is the content of a rules file (the `groups:` YAML); none when empty.
	Rules string
	// Interval is both the scrape and the rule evaluation interval; 1s when zero.
	Interval time.Duration
	// TLS, when set, makes the server serve HTTPS only (--web.config.file), as
	// a production server behind a bearer token must.
	TLS *PrometheusTLS
}

// PrometheusTLS is the server's keypair and the CA that issued it, which the
// helpers' own client (readiness, Query) trusts.
type PrometheusTLS struct {
	CertFile, KeyFile, CAFile string
}

// Prometheus is a real Prometheus server run as a subprocess on a loopback port
// with its own temporary data directory. It is stopped when the test ends.
type Prometheus struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:41234 (https:// with TLS).
	URL  string
	Addr string
	// Client reaches URL: http.DefaultClient, or one trusting PrometheusTLS.CAFile.
	Client *http.Client

	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

// StartPrometheus writes prometheus.yml (and the rules file), starts the
// server and waits until it answers /-/ready. The server's output is logged if
// the test fails.
func StartPrometheus(t tb.T, opts PrometheusOptions) *Prometheus {
	t.Helper()
	bin, err := PrometheusBinary()
	if err != nil {
		t.Fatal(err)
	}
	if opts.JobName == "" {
		opts.JobName = "demo"
	}
	if opts.Interval == 0 {
		opts.Interval = time.Second
	}
	dir := t.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n", promDuration(opts.Interval), promDuration(opts.Interval))
	if opts.Rules != "" {
		rules := filepath.Join(dir, "rules.yml")
		if err := os.WriteFile(rules, []byte(opts.Rules), 0o600); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cfg, "rule_files:\n  - %q\n", rules)
	}
	fmt.Fprintf(&cfg, "scrape_configs:\n  - job_name: %q\n    static_configs:\n      - targets: [", opts.JobName)
	for i, tg := range opts.Targets {
		if i > 0 {
			cfg.WriteString(", ")
		}
		fmt.Fprintf(&cfg, "%q", tg)
	}
	cfg.WriteString("]\n")
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	p := &Prometheus{Addr: FreeAddr(t), out: &syncBuffer{}, done: make(chan struct{}), Client: http.DefaultClient}
	p.URL = "http://" + p.Addr
	args := []string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + p.Addr,
		"--storage.tsdb.retention.time=1h",
		// Debian's defaults point at /etc/prometheus; nothing there is needed.
		"--web.console.templates=" + dir,
		"--web.console.libraries=" + dir,
	}
	if opts.TLS != nil {
		web := filepath.Join(dir, "web.yml")
		webCfg := fmt.Sprintf("tls_server_config:\n  cert_file: %q\n  key_file: %q\n", opts.TLS.CertFile, opts.TLS.KeyFile)
		if err := os.WriteFile(web, []byte(webCfg), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--web.config.file="+web)
		ca, err := os.ReadFile(opts.TLS.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(ca) {
			t.Fatalf("no certificate in PrometheusTLS.CAFile %s", opts.TLS.CAFile)
		}
		p.URL = "https://" + p.Addr
		p.Client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}}}
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("prometheus config:\n%s\nprometheus output:\n%s", cfg.String(), p.out.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := p.Client.Get(p.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-p.done:
			t.Fatalf("prometheus exited before it was ready (%v):\n%s", p.err, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready at %s/-/ready after 60s (last error %v):\n%s", p.URL, err, p.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p
}

// promDuration writes d the way Prometheus's config accepts it (no "1m0s").
func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

// Output is what the server logged so far.
func (p *Prometheus) Output() string { return p.out.String() }

// Stop terminates the server (SIGTERM, then SIGKILL after 20s).
func (p *Prometheus) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// PromSample is one series of an instant query result.
type PromSample struct {
	Labels map[string]string
	Value  string
}

// Query runs an instant query and returns the series it found.
func (p *Prometheus) Query(ctx context.Context, expr string) ([]PromSample, error) {
	var result []struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	if err := p.api(ctx, "/api/v1/query?query="+url.QueryEscape(expr), expr, &result); err != nil {
		return nil, err
	}
	out := make([]PromSample, 0, len(result))
	for _, s := range result {
		v, _ := s.Value[1].(string)
		out = append(out, PromSample{Labels: s.Metric, Value: v})
	}
	return out, nil
}

// PromRange is one series of a range query: its labels and its points.
type PromRange struct {
	Labels map[string]string
	Points []PromPoint
}

// PromPoint is one sample of a range query.
type PromPoint struct {
	At    time.Time
	Value float64
}

// QueryRange runs a range query from from to to, a point every step.
func (p *Prometheus) QueryRange(ctx context.Context, expr string, from, to time.Time, step time.Duration) ([]PromRange, error) {
	var result []struct {
		Metric map[string]string `json:"metric"`
		Values [][2]any          `json:"values"`
	}
	q := fmt.Sprintf("/api/v1/query_range?query=%s&start=%d&end=%d&step=%s", url.QueryEscape(expr), from.Unix(), to.Unix(), promDuration(step))
	if err := p.api(ctx, q, expr, &result); err != nil {
		return nil, err
	}
	out := make([]PromRange, 0, len(result))
	for _, s := range result {
		r := PromRange{Labels: s.Metric}
		for _, v := range s.Values {
			ts, _ := v[0].(float64)
			str, _ := v[1].(string)
			f, err := strconv.ParseFloat(str, 64)
			if err != nil {
				continue
			}
			r.Points = append(r.Points, PromPoint{At: time.Unix(0, int64(ts*1e9)), Value: f})
		}
		out = append(out, r)
	}
	return out, nil
}

// api GETs path from the HTTP API and decodes its data.result into result, or
// returns the error Prometheus answered (expr names the query in it).
func (p *Prometheus) api(ctx context.Context, path, expr string, result any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("query %q: %w: %s", expr, err, body)
	}
	if r.Status != "success" {
		return fmt.Errorf("query %q: %s", expr, r.Error)
	}
	if err := json.Unmarshal(r.Data.Result, result); err != nil {
		return fmt.Errorf("query %q: %w", expr, err)
	}
	return nil
}

// WaitForQuery polls an instant query until it returns at least one series, so a
// test knows the target was scraped (and a rule evaluated) before it goes on.
func (p *Prometheus) WaitForQuery(t tb.T, expr string, timeout time.Duration) []PromSample {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.Query(ctx, expr)
		cancel()
		if err == nil && len(res) > 0 {
			return res
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("prometheus query %q returned nothing within %s (last error: %v)\n%s", expr, timeout, last, p.Output())
	return nil
}

// DemoTarget is an HTTP server exposing /metrics with client_golang: one metric
// of every classic type with fixed, known values, so a test can compare what
// arrives downstream with what the target exposed.
//
//   - demo_requests_total            counter   {path="/a"} 42, {path="/b"} 7
//   - demo_temperature_celsius       gauge     {room="lab"} 21.5
//   - demo_request_duration_seconds  histogram buckets 0.05..2.5, 10 observations
//   - demo_response_size_bytes       summary   quantiles 0.5/0.9/0.99, 8 observations
//   - demo_queue_depth               gauge     {queue="a"} 3, {queue="b"} 4, which
//     DemoRules sums into job:demo_queue_depth:sum
type DemoTarget struct {
	Addr string
	srv  *http.Server

	mu  sync.Mutex
	reg *prometheus.Registry
	// Requests is the counter of the current incarnation; Restart replaces it.
	Requests *prometheus.CounterVec
}

// DemoRules is a rules file with one recording rule over the demo target.
const DemoRules = `groups:
  - name: demo
    rules:
      - record: job:demo_queue_depth:sum
        expr: sum by (job) (demo_queue_depth)
`

// DemoHistogramBuckets are the target's histogram bounds.
var DemoHistogramBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5}

// NewDemoTarget serves the demo metrics on a free loopback port until the test ends.
func NewDemoTarget(t tb.T) *DemoTarget {
	t.Helper()
	d := &DemoTarget{}
	d.populate(42, 7)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.Addr = l.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("/metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		reg := d.reg
		d.mu.Unlock()
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	}))
	d.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = d.srv.Serve(l) }()
	t.Cleanup(func() { _ = d.srv.Close() })
	return d
}

// populate builds a fresh registry, as a freshly started process would have.
func (d *DemoTarget) populate(a, b float64) {
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "demo_requests_total", Help: "Requests handled by the demo target.",
	}, []string{"path"})
	requests.WithLabelValues("/a").Add(a)
	requests.WithLabelValues("/b").Add(b)
	temp := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "demo_temperature_celsius", Help: "Temperature of the demo room.",
	}, []string{"room"})
	temp.WithLabelValues("lab").Set(21.5)
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "demo_request_duration_seconds", Help: "Duration of demo requests.",
		Buckets: DemoHistogramBuckets,
	}, []string{"path"})
	for _, v := range []float64{0.01, 0.03, 0.07, 0.2, 0.2, 0.3, 0.7, 1.5, 2, 4} {
		dur.WithLabelValues("/a").Observe(v)
	}
	size := prometheus.NewSummary(prometheus.SummaryOpts{
		Name: "demo_response_size_bytes", Help: "Size of demo responses.",
		Objectives: map[float64]float64{0.5: 0.05, 0.9: 0.01, 0.99: 0.001},
		MaxAge:     time.Hour,
	})
	for _, v := range []float64{100, 200, 300, 400, 500, 600, 700, 800} {
		size.Observe(v)
	}
	queue := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "demo_queue_depth", Help: "Items waiting in a demo queue.",
	}, []string{"queue"})
	queue.WithLabelValues("a").Set(3)
	queue.WithLabelValues("b").Set(4)
	reg.MustRegister(requests, temp, dur, size, queue)
	d.mu.Lock()
	d.reg, d.Requests = reg, requests
	d.mu.Unlock()
}

// Restart simulates a restart of the target process: every metric starts again,
// and the counter comes back lower ({path="/a"} a, {path="/b"} b).
func (d *DemoTarget) Restart(a, b float64) { d.populate(a, b) }

// Gather returns what the target exposes right now, by family name.
func (d *DemoTarget) Gather() (map[string]*dto.MetricFamily, error) {
	d.mu.Lock()
	reg := d.reg
	d.mu.Unlock()
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	out := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	if len(out) == 0 {
		return nil, errors.New("demo target exposes nothing")
	}
	return out, nil
}
