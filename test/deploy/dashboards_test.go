// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// grafanaVariables stand in for what Grafana substitutes into a query before it
// reaches Prometheus, so that the query parses as Prometheus will see it.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "1m", "$namespace", "otelcol-relay", "$exporter", "otlp_http_wire/default")

// TestDashboardQueries: every query of every panel of deploy/components/dashboards
// parses as PromQL and reads only series that are served, each with the labels it
// matches and groups by: the built binary's (scraped, or for what counts only
// events, its declaration), fluent-bit's (from its source), Prometheus's own, and
// those the shipped recording rules write, as for the alerts. The component renders them as
// ConfigMaps Grafana's sidecar loads.
func TestDashboardQueries(t *testing.T) {
	files, err := filepath.Glob(manifest.Dir("components", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in deploy/components/dashboards (%v)", err)
	}
	type target struct{ where, expr string }
	var targets []target
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, p := range d.Panels {
			for _, q := range p.Targets {
				targets = append(targets, target{filepath.Base(f) + ": " + p.Title, grafanaVariables.Replace(q.Expr)})
			}
		}
	}
	// Our components' series that exist only once what they count has happened (a
	// refusal) are taken from their declaration, with its attributes as labels.
	var exprs []string
	for _, tg := range targets {
		exprs = append(exprs, tg.expr)
	}
	served := servedFor(t, exprs, "the dashboards", fluentBitSeries, prometheusSeries, declaredSeries(t), recordedSeries(t))
	for _, tg := range targets {
		checkNamesServed(t, tg.where, tg.expr, served)
	}

	var labelled bool
	for _, doc := range manifest.Docs(t, manifest.Dir("overlays", "platform")) {
		if strings.Contains(doc, "name: otelcol-relay-dashboards") && strings.Contains(doc, `grafana_dashboard: "1"`) {
			labelled = true
		}
	}
	if !labelled {
		t.Error(`the platform overlay renders no ConfigMap otelcol-relay-dashboards labelled grafana_dashboard: "1"`)
	}
}
