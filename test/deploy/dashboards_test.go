// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
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
	type target struct{ where, expr string }
	var targets []target
	for _, p := range manifest.DashboardPanels(t) {
		for _, q := range p.Targets {
			targets = append(targets, target{p.Dashboard + ".json: " + p.Title, grafanaVariables.Replace(q.Expr)})
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
