// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// Proof for deploy/components/alerts: every metric name and label the rules read is
// one the built binary actually serves on its metrics endpoint (scraped here, not
// remembered), or one of fluent-bit's (listed below from its source: it cannot run
// here) or Prometheus's own `up`; the promtool unit tests feed the rules series of
// exactly those names, `promtool test rules` passes with a firing case for every
// alert, and every alert links its section of the runbooks.

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// alertsSourceConfig makes the binary produce every series the alerts read: a
// persistent byte-sized queue (queue_storage, as the gateway's) in front of an
// unreachable backend (queue size, capacity and oldest item's age, send failures,
// for each signal), certwatch on that exporter
// (certificate expiry), a memory_limiter that refuses everything behind a second
// receiver (its own refusals and the receiver's), and federation_types against
// an unreachable Prometheus (metadata age), and a second exporter to a sink that
// takes everything (what was sent, which the dashboards read). Both receivers are otlp_http_pooled,
// the gateway's OTLP/HTTP intake. The telemetry settings are the gateway's (level
// normal, a pull reader).
const alertsSourceConfig = `
extensions:
  queue_storage:
    directory: ${env:T_QUEUE}
  admission:
    drain:
      endpoint: ${env:T_DRAIN}
      metrics_url: http://127.0.0.1:${env:T_METRICS_PORT}/metrics
      timeout: 1s
  certwatch/default:
    ca_file: ${env:T_CERTS}/ca.crt
    cert_file: ${env:T_CERTS}/tls.crt
    key_file: ${env:T_CERTS}/tls.key
receivers:
  otlp_http_pooled:
    endpoint: "${env:T_HTTP}"
  otlp_http_pooled/limited:
    endpoint: "${env:T_HTTP_LIMITED}"
processors:
  memory_limiter:
    check_interval: 100ms
    limit_mib: 2
    spike_limit_mib: 1
  federation_types:
    endpoint: http://${env:T_DEAD}
    refresh_interval: 5m
exporters:
  otlp_http/default:
    endpoint: https://${env:T_DEAD}
    middlewares: [{id: certwatch/default}]
    sending_queue: {storage: queue_storage, sizer: bytes, queue_size: 67108864}
    retry_on_failure: {enabled: false}
  otlp_http/plaintext-live:
    endpoint: http://${env:T_LIVE}
service:
  extensions: [queue_storage, certwatch/default, admission]
` + e2e.SelfMetricsTelemetry + `  pipelines:
    logs: {receivers: [otlp_http_pooled], exporters: [otlp_http/default, otlp_http/plaintext-live]}
    metrics: {receivers: [otlp_http_pooled], processors: [federation_types], exporters: [otlp_http/default, otlp_http/plaintext-live]}
    traces: {receivers: [otlp_http_pooled], exporters: [otlp_http/default, otlp_http/plaintext-live]}
    logs/limited: {receivers: [otlp_http_pooled/limited], processors: [memory_limiter], exporters: [otlp_http/default]}
    metrics/limited: {receivers: [otlp_http_pooled/limited], processors: [memory_limiter], exporters: [otlp_http/default]}
    traces/limited: {receivers: [otlp_http_pooled/limited], processors: [memory_limiter], exporters: [otlp_http/default]}
`

// promql parses expressions and series the way Prometheus does.
var promql = parser.NewParser(parser.Options{})

// scrapeLabels are added by the monitors' scrapes, not by the binary (node by the
// agents' and fluent-bit's PodMonitors).
var scrapeLabels = map[string]bool{"job": true, "instance": true, "namespace": true, "pod": true, "service": true, "endpoint": true, "container": true, "node": true}

// fluentBitSeries are the fluent-bit series the alerts may read, with their labels,
// as fluent-bit v4 serves them on /api/v2/metrics/prometheus: registered with
// cmt_counter_create/cmt_gauge_create in flb_output_init_all (src/flb_output.c),
// the input's counted in src/flb_input_chunk.c, each with the one label `name` (the
// instance's alias).
// fluent-bit cannot be built or run on these machines; the names were read in its
// source (deploy/docs/fluent-bit.md, "Its metrics").
var fluentBitSeries = map[string]map[string]bool{
	"fluentbit_input_records_total":                     {"name": true},
	"fluentbit_input_bytes_total":                       {"name": true},
	"fluentbit_output_proc_records_total":               {"name": true},
	"fluentbit_output_proc_bytes_total":                 {"name": true},
	"fluentbit_output_errors_total":                     {"name": true},
	"fluentbit_output_retries_total":                    {"name": true},
	"fluentbit_output_retries_failed_total":             {"name": true},
	"fluentbit_output_dropped_records_total":            {"name": true},
	"fluentbit_output_retried_records_total":            {"name": true},
	"fluentbit_output_chunk_available_capacity_percent": {"name": true},
}

// prometheusSeries are what Prometheus records for each target itself.
var prometheusSeries = map[string]map[string]bool{"up": {}}

func alertsDir(parts ...string) string {
	return manifest.Dir(append([]string{"components", "alerts"}, parts...)...)
}

func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool (Debian's prometheus package, `make test-deps`) is not on PATH: %v", err)
	}
	rules, alerts, records := ruleFileFromPrometheusRule(t)
	var exprs []string
	for _, a := range slices.Concat(alerts, records) {
		exprs = append(exprs, a.expr)
	}
	served := servedFor(t, exprs, "the alerts", fluentBitSeries, prometheusSeries)
	checkRunbooks(t, alerts)

	for _, a := range alerts {
		checkNamesServed(t, "alert "+a.name, a.expr, served)
	}
	for _, r := range records {
		checkNamesServed(t, "recording rule "+r.name, r.expr, served)
	}

	tests := promtoolTests(t)
	for _, s := range tests.inputSeries {
		m, perr := promql.ParseMetric(s)
		if perr != nil {
			t.Fatalf("promtool test input series %q: %v", s, perr)
		}
		checkLabelsServed(t, "promtool input series "+s, m, served)
	}
	for _, a := range alerts {
		if !tests.firing[a.name] {
			t.Errorf("alert %s has no promtool test case in which it fires", a.name)
		}
	}
	for _, r := range records {
		if !tests.evaluated[r.name] {
			t.Errorf("recording rule %s has no promtool promql_expr_test with samples", r.name)
		}
	}

	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "rules.yaml")
	testcerts.WriteFile(t, rulesFile, rules)
	testFile := filepath.Join(dir, "rules_test.yaml")
	raw, err := os.ReadFile(alertsDir("rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	testcerts.WriteFile(t, testFile, raw)
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", testFile}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

// servedFor is what the queries exprs may read, each metric name with its labels:
// the series of others, taken as they are, and the rest as the built binary serves
// them (servedSeries, which waits for each; reader names who reads them).
func servedFor(t *testing.T, exprs []string, reader string, others ...map[string]map[string]bool) map[string]map[string]bool {
	t.Helper()
	var want []string
	for _, expr := range exprs {
		for _, name := range selectorNames(t, expr) {
			if !slices.ContainsFunc(others, func(o map[string]map[string]bool) bool { return o[name] != nil }) {
				want = append(want, name)
			}
		}
	}
	served := servedSeries(t, want, reader)
	for _, name := range want {
		t.Logf("served: %s %v", name, sortedKeys(served[name]))
	}
	for _, o := range others {
		maps.Copy(served, o)
	}
	return served
}

// servedSeries runs the binary until its metrics endpoint serves every family in
// want, which reader reads, and returns metric name -> label names seen on it.
func servedSeries(t *testing.T, want []string, reader string) map[string]map[string]bool {
	t.Helper()
	certs := filepath.Join(t.TempDir(), "certs")
	ca := testcerts.NewCA(t, "alerts-ca")
	testcerts.AtomicWrite(t, certs, ca.Client(t, testcerts.Options{CommonName: "relay"}).SecretFiles(ca.CertPEM))
	httpAddr, limitedAddr, dead, metricsPort, drainAddr := e2e.FreeAddr(t), e2e.FreeAddr(t), e2e.FreeAddr(t), e2e.FreePort(t), e2e.FreeAddr(t)
	live := e2e.NewSink(t, otlpfixture.SinkOptions{})
	e2e.Start(t, alertsSourceConfig, e2e.Options{Env: []string{
		"T_QUEUE=" + t.TempDir(), "T_CERTS=" + certs, "T_HTTP=" + httpAddr, "T_HTTP_LIMITED=" + limitedAddr,
		"T_DEAD=" + dead, "T_METRICS_PORT=" + strconv.Itoa(metricsPort), "T_DRAIN=" + drainAddr, "T_LIVE=" + live.HTTPAddr,
	}})

	ctx := context.Background()
	metrics, traces := otlpMetricsBody(t), otlpTracesBody(t)
	var served map[string]map[string]bool
	var missing []string
	ok := otlpfixture.WaitFor(90*time.Second, func() bool {
		// Refusals and send failures only exist once something was refused or failed.
		for _, addr := range []string{httpAddr, limitedAddr} {
			c := e2e.NewHTTPClient("http://"+addr, nil)
			_ = c.SendLogs(ctx, otlpfixture.FluentBitLogs(10, 0), otlpfixture.Encoding{})
			_, _, _ = c.Post(ctx, "/v1/metrics", metrics, "application/x-protobuf", "")
			_, _, _ = c.Post(ctx, "/v1/traces", traces, "application/x-protobuf", "")
		}
		// A drain that gives up (the backend is dead, the queue holds data)
		// records what it leaves on the volume.
		if resp, err := http.Get("http://" + drainAddr + "/drain"); err == nil {
			resp.Body.Close()
		}
		served, missing = scrapeFamilies(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)), nil
		for _, w := range want {
			if _, ok := served[w]; !ok {
				missing = append(missing, w)
			}
		}
		return len(missing) == 0
	})
	if !ok {
		t.Fatalf("after 90s the metrics endpoint still lacks %v, which %s read; it serves:\n%s", missing, reader, strings.Join(sortedKeys(served), "\n"))
	}
	return served
}

func scrapeFamilies(t *testing.T, url string) map[string]map[string]bool {
	t.Helper()
	raw, err := e2e.Get(url, 10*time.Second)
	if err != nil {
		return nil
	}
	out := map[string]map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series := line[:strings.LastIndexByte(line, ' ')]
		m, err := promql.ParseMetric(series)
		if err != nil {
			t.Fatalf("metrics endpoint line %q: %v", line, err)
		}
		name := m.Get(model.MetricNameLabel)
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		m.Range(func(l labels.Label) {
			if l.Name != model.MetricNameLabel {
				out[name][l.Name] = true
			}
		})
	}
	return out
}

func otlpMetricsBody(t *testing.T) []byte {
	t.Helper()
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("up")
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetDoubleValue(1)
	dp.SetTimestamp(1)
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func otlpTracesBody(t *testing.T) []byte {
	t.Helper()
	td := ptrace.NewTraces()
	span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetName("alerts")
	span.SetTraceID([16]byte{1})
	span.SetSpanID([8]byte{1})
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// selectorNames are the metric names expr reads.
func selectorNames(t *testing.T, expr string) []string {
	t.Helper()
	e, err := promql.ParseExpr(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && vs.Name != "" {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

type alertRule struct {
	group, name, expr, runbook string
	labels                     []string // a recording rule's own labels
}

// recordedSeries are the series the recording rules write, each with its labels:
// its own and those its outer aggregation keeps.
func recordedSeries(t *testing.T) map[string]map[string]bool {
	t.Helper()
	_, _, records := ruleFileFromPrometheusRule(t)
	out := map[string]map[string]bool{}
	for _, r := range records {
		if out[r.name] == nil {
			out[r.name] = map[string]bool{}
		}
		for _, l := range r.labels {
			out[r.name][l] = true
		}
		e, err := promql.ParseExpr(r.expr)
		if err != nil {
			t.Fatalf("recording rule %s: %v", r.name, err)
		}
		if agg, ok := e.(*parser.AggregateExpr); ok && !agg.Without {
			for _, l := range agg.Grouping {
				out[r.name][l] = true
			}
		}
	}
	return out
}

// ruleFileFromPrometheusRule reads the component's PrometheusRule and returns its
// spec as a plain Prometheus rule file (what promtool reads), its alerts and its
// recording rules (name is the record's).
func ruleFileFromPrometheusRule(t *testing.T) ([]byte, []alertRule, []alertRule) {
	t.Helper()
	raw, err := os.ReadFile(alertsDir("prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Alert       string            `json:"alert"`
					Record      string            `json:"record"`
					Labels      map[string]string `json:"labels"`
					Expr        string            `json:"expr"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if uerr := yaml.Unmarshal(raw, &pr); uerr != nil {
		t.Fatal(uerr)
	}
	if pr.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml is a %q", pr.Kind)
	}
	var alerts, records []alertRule
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, alertRule{g.Name, r.Alert, r.Expr, r.Annotations["runbook_url"], nil})
			}
			if r.Record != "" {
				records = append(records, alertRule{g.Name, r.Record, r.Expr, "", slices.Sorted(maps.Keys(r.Labels))})
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatal("prometheusrule.yaml has no alerts")
	}
	var spec map[string]any
	if uerr := yaml.Unmarshal(raw, &spec); uerr != nil {
		t.Fatal(uerr)
	}
	out, err := yaml.Marshal(spec["spec"])
	if err != nil {
		t.Fatal(err)
	}
	return out, alerts, records
}

// checkNamesServed parses expr and checks each selector's metric name, and each
// label it matches on or groups by, against what the binary serves.
func checkNamesServed(t *testing.T, what, expr string, served map[string]map[string]bool) {
	t.Helper()
	e, err := promql.ParseExpr(expr)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if vs.Name == "" {
				t.Errorf("%s: selector %s has no metric name", what, vs)
				return nil
			}
			names = append(names, vs.Name)
			lbls, found := served[vs.Name]
			if !found {
				t.Errorf("%s reads %s, which neither the binary nor fluent-bit nor Prometheus serves", what, vs.Name)
				return nil
			}
			for _, m := range vs.LabelMatchers {
				if m.Name != model.MetricNameLabel && !lbls[m.Name] && !scrapeLabels[m.Name] {
					t.Errorf("%s matches label %s on %s, which has labels %v", what, m.Name, vs.Name, sortedKeys(lbls))
				}
			}
		}
		return nil
	})
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if agg, ok := n.(*parser.AggregateExpr); ok && !agg.Without {
			for _, l := range agg.Grouping {
				if scrapeLabels[l] {
					continue
				}
				for _, name := range names {
					if !served[name][l] {
						t.Errorf("%s groups by %s, which %s does not carry (it has %v)", what, l, name, sortedKeys(served[name]))
					}
				}
			}
		}
		return nil
	})
}

func checkLabelsServed(t *testing.T, what string, m labels.Labels, served map[string]map[string]bool) {
	t.Helper()
	name := m.Get(model.MetricNameLabel)
	lbls, ok := served[name]
	if !ok {
		t.Errorf("%s: neither the binary nor fluent-bit nor Prometheus serves %s", what, name)
		return
	}
	m.Range(func(l labels.Label) {
		if l.Name != model.MetricNameLabel && !lbls[l.Name] && !scrapeLabels[l.Name] {
			t.Errorf("%s: label %s is not on the served %s (it has %v)", what, l.Name, name, sortedKeys(lbls))
		}
	})
	for l := range lbls {
		// The binary here exports over HTTP; a gRPC exporter's series (the agents'
		// otlp_grpc/gateway) carry no url_path.
		if l == "url_path" && strings.HasPrefix(m.Get("exporter"), "otlp_grpc") {
			continue
		}
		if !m.Has(l) && l != "otel_scope_name" && l != "otel_scope_version" && !strings.HasPrefix(l, "otel_scope_") {
			t.Errorf("%s lacks label %s that the served %s carries", what, l, name)
		}
	}
}

// runbookURL is where an alert's runbook_url points: its section of
// deploy/docs/runbooks.md, as GitHub renders the heading's anchor.
const runbookURL = "https://github.com/otelcol-relay/otelcol-relay/blob/main/deploy/docs/runbooks.md#"

// checkRunbooks: each alert links a section of deploy/docs/runbooks.md headed by its
// name, and each such section is an alert's.
func checkRunbooks(t *testing.T, alerts []alertRule) {
	t.Helper()
	raw, err := os.ReadFile(manifest.Dir("docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok && strings.HasPrefix(name, "OtelcolRelay") {
			sections[name] = true
		}
	}
	names := map[string]bool{}
	for _, a := range alerts {
		names[a.name] = true
		if want := runbookURL + strings.ToLower(a.name); a.runbook != want {
			t.Errorf("alert %s: runbook_url %q, want %q", a.name, a.runbook, want)
		}
		if !sections[a.name] {
			t.Errorf("alert %s: deploy/docs/runbooks.md has no section \"## %s\"", a.name, a.name)
		}
	}
	for name := range sections {
		if !names[name] {
			t.Errorf("deploy/docs/runbooks.md has a section for %s, which is no alert", name)
		}
	}
}

type promtoolTestFile struct {
	inputSeries []string
	firing      map[string]bool // alerts some case expects to fire
	evaluated   map[string]bool // expressions some case expects samples of
}

func promtoolTests(t *testing.T) promtoolTestFile {
	t.Helper()
	raw, err := os.ReadFile(alertsDir("rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			InputSeries []struct {
				Series string `json:"series"`
			} `json:"input_series"`
			AlertRuleTests []struct {
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
			ExprTests []struct {
				Expr       string           `json:"expr"`
				ExpSamples []map[string]any `json:"exp_samples"`
			} `json:"promql_expr_test"`
		} `json:"tests"`
	}
	if err := yaml.UnmarshalStrict(raw, &f); err != nil {
		// promtool's format has more fields than read here; only decoding matters.
		if err := yaml.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.RuleFiles) != 1 || f.RuleFiles[0] != "rules.yaml" {
		t.Fatalf("rules_test.yaml must read rule_files: [rules.yaml] (the test writes the PrometheusRule's spec there), has %v", f.RuleFiles)
	}
	out := promtoolTestFile{firing: map[string]bool{}, evaluated: map[string]bool{}}
	for _, tc := range f.Tests {
		for _, s := range tc.InputSeries {
			out.inputSeries = append(out.inputSeries, s.Series)
		}
		for _, a := range tc.AlertRuleTests {
			if len(a.ExpAlerts) > 0 {
				out.firing[a.Alertname] = true
			}
		}
		for _, e := range tc.ExprTests {
			if len(e.ExpSamples) > 0 {
				out.evaluated[e.Expr] = true
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
