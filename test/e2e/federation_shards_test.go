// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// TestFederationShardsThroughRealPrometheus runs two federation shards the way
// deploy/components/federation with deploy/components/federation-shards deploys them (config/
// federation.yaml, pod index 0 and 1, the component's selectors), each to its own
// backend, against one real Prometheus: the union of what the shards deliver is
// every series /federate has, and no series arrives from both shards.
func TestFederationShardsThroughRealPrometheus(t *testing.T) {
	files := newInClusterFiles(t, "shard-token")
	target := e2e.NewDemoTarget(t)
	prom := e2e.StartPrometheus(t, e2e.PrometheusOptions{
		Targets: []string{target.Addr}, Rules: e2e.DemoRules, TLS: files.prometheusTLS(),
	})
	prom.WaitForQuery(t, `job:demo_queue_depth:sum`, 60*time.Second)
	prom.WaitForQuery(t, `scrape_series_added`, 60*time.Second)
	want := federatedSeries(t, prom)
	t.Logf("/federate has %d series groups: %v", len(want), slices.Sorted(maps.Keys(want)))

	overlay := manifest.FederationOverlay(t, "federation-shards")
	const shards = 2
	sinks := make([]*otlpfixture.Sink, shards)
	for i := range shards {
		backend := e2e.NewBackendTLS(t, "default")
		sinks[i] = e2e.NewSink(t, otlpfixture.SinkOptions{TLS: backend.Server})
		env := append(shardEnv(t, overlay, i), files.federationEnv(prom.Addr)...)
		gw := e2e.NewGateway(t, e2e.GatewayOptions{BackendURL: "https://" + sinks[i].HTTPAddr, Backend: backend, Env: env})
		e2e.Start(t, "", e2e.Options{Env: gw.Env, Args: []string{"--config=" + gatewayConfig("federation.yaml")}, ReadyTimeout: 90 * time.Second})
	}

	var got [shards]map[string]bool
	union := func() map[string]int {
		u := map[string]int{}
		for i, s := range sinks {
			got[i] = deliveredSeries(s, prom.Addr)
			for k := range got[i] {
				u[k]++
			}
		}
		return u
	}
	// Each shard scrapes every 30 s; histograms need federation_types' metadata.
	complete := otlpfixture.WaitFor(3*time.Minute, func() bool {
		u := union()
		for k := range want {
			if u[k] == 0 {
				return false
			}
		}
		return true
	})
	u := union()
	for i := range got {
		t.Logf("shard %d delivered %v", i, slices.Sorted(maps.Keys(got[i])))
		if len(got[i]) == 0 {
			t.Errorf("shard %d delivered nothing: its selector splits nothing off", i)
		}
	}
	if !complete {
		for k := range want {
			if u[k] == 0 {
				t.Errorf("series %s is on /federate but no shard delivered it", k)
			}
		}
	}
	for k, n := range u {
		if n > 1 {
			t.Errorf("series %s arrived from %d shards", k, n)
		}
		if !want[k] {
			t.Errorf("series %s delivered, but /federate does not have it", k)
		}
	}
}

var (
	promLine  = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+(?:\s+\S+)?$`)
	promLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// seriesKey names a federated series group: the metric name as /federate has it
// and its labels without le and quantile (one key per histogram or summary
// series group, not per bucket).
func seriesKey(name string, labels map[string]string) string {
	var ls []string
	for k, v := range labels {
		if k == "le" || k == "quantile" || v == "" {
			continue
		}
		ls = append(ls, k+"="+v)
	}
	sort.Strings(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

// federatedSeries reads every series the server federates, as seriesKeys.
func federatedSeries(t *testing.T, prom *e2e.Prometheus) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, prom.URL+"/federate?match[]="+url.QueryEscape(`{__name__=~".+"}`), http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := prom.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/federate: %v %s", err, resp.Status)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := promLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unparsable /federate line %q", line)
		}
		labels := map[string]string{}
		for _, l := range promLabel.FindAllStringSubmatch(m[2], -1) {
			labels[l[1]] = l[2]
		}
		out[seriesKey(m[1], labels)] = true
	}
	if len(out) == 0 {
		t.Fatal("/federate returned no series")
	}
	return out
}

// scrapeSelfMetrics are the series the prometheus receiver adds about its own
// scrape of /federate (job = the scrape config's, instance = the server): not
// federated series.
var scrapeSelfMetrics = map[string]bool{
	"up": true, "scrape_duration_seconds": true, "scrape_samples_scraped": true,
	"scrape_samples_post_metric_relabeling": true, "scrape_series_added": true,
}

// deliveredSeries maps what a sink received back to seriesKeys: the resource's
// service.name and service.instance.id are the job and instance labels (the
// server's address where the series had no instance), a histogram or summary is
// its _bucket/_sum/_count (or quantile) series.
func deliveredSeries(s *otlpfixture.Sink, server string) map[string]bool {
	out := map[string]bool{}
	for _, md := range s.Metrics() {
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			rm := md.ResourceMetrics().At(i)
			job := attr(rm.Resource().Attributes(), "service.name")
			instance := attr(rm.Resource().Attributes(), "service.instance.id")
			if instance == server {
				instance = ""
			}
			forEachMetric(rm, func(m pmetric.Metric) {
				if job == "federate" && instance == "" && scrapeSelfMetrics[m.Name()] {
					return
				}
				add := func(attrs pcommon.Map, names ...string) {
					labels := map[string]string{"job": job, "instance": instance}
					attrs.Range(func(k string, v pcommon.Value) bool {
						labels[k] = v.AsString()
						return true
					})
					for _, n := range names {
						out[seriesKey(n, labels)] = true
					}
				}
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					for j := 0; j < m.Gauge().DataPoints().Len(); j++ {
						add(m.Gauge().DataPoints().At(j).Attributes(), m.Name())
					}
				case pmetric.MetricTypeSum:
					for j := 0; j < m.Sum().DataPoints().Len(); j++ {
						add(m.Sum().DataPoints().At(j).Attributes(), m.Name())
					}
				case pmetric.MetricTypeHistogram:
					for j := 0; j < m.Histogram().DataPoints().Len(); j++ {
						add(m.Histogram().DataPoints().At(j).Attributes(), m.Name()+"_bucket", m.Name()+"_sum", m.Name()+"_count")
					}
				case pmetric.MetricTypeSummary:
					for j := 0; j < m.Summary().DataPoints().Len(); j++ {
						add(m.Summary().DataPoints().At(j).Attributes(), m.Name(), m.Name()+"_sum", m.Name()+"_count")
					}
				default:
					out[fmt.Sprintf("%s (unexpected type %s)", m.Name(), m.Type())] = true
				}
			})
		}
	}
	return out
}
