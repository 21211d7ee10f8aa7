// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// The metrics and alerts the docs name are the ones that ship.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// metricName is a self-metric name as a doc writes it; a name followed by `_*` or
// `_<x>` is a family (no match), one followed by `.x` an attribute namespace.
var metricName = regexp.MustCompile(`\botelcol_[a-z0-9_]*[a-z0-9]\b`)

var alertName = regexp.MustCompile(`\bOtelcolRelay[A-Z][A-Za-z]+\b`)

// declaredSeries are the self-metrics our components declare in metadata.yaml, each
// with its attributes as labels, as the metrics endpoint names them.
func declaredSeries(t *testing.T) map[string]map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(e2e.RepoRoot(), "components", "*", "metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var md struct {
			Telemetry struct {
				Metrics map[string]struct {
					Attributes []string `json:"attributes"`
				} `json:"metrics"`
			} `json:"telemetry"`
		}
		if err := yaml.Unmarshal(raw, &md); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for name, m := range md.Telemetry.Metrics {
			lbls := map[string]bool{}
			for _, a := range m.Attributes {
				lbls[a] = true
			}
			out["otelcol_"+name] = lbls
		}
	}
	return out
}

// TestDeployDocsNameShippedMetricsAndAlerts: every otelcol_* metric a user doc
// names is one our components declare or one the built binary serves (scraped
// with the alert test's config, which makes the exporter, receiver, queue and
// process series appear), so a query copied from the docs finds data; every alert
// a doc names is in components/alerts, and deploy/docs/monitoring.md names every alert
// it ships.
func TestDeployDocsNameShippedMetricsAndAlerts(t *testing.T) {
	// Some exist only once what they count has happened: the declaration stands for them.
	declared := declaredSeries(t)
	named := map[string][]string{} // metric -> doc:line
	alertsNamed := map[string][]string{}
	recordsNamed := map[string][]string{}
	for _, doc := range userDocs(t) {
		for i, line := range strings.Split(readDoc(t, doc), "\n") {
			where := fmt.Sprintf("%s:%d", doc, i+1)
			for _, loc := range metricName.FindAllStringIndex(line, -1) {
				if rest := line[loc[1]:]; strings.HasPrefix(rest, ".") && len(rest) > 1 && rest[1] >= 'a' && rest[1] <= 'z' {
					continue // otelcol_relay.claimed.<name>: an attribute namespace
				}
				if rest := line[loc[1]:]; strings.HasPrefix(rest, ":") {
					// otelcol_relay:log_records:rate5m: a recording rule's series.
					rec := line[loc[0]:]
					if i := strings.IndexFunc(rec, func(r rune) bool { return r != ':' && r != '_' && (r < 'a' || r > 'z') && (r < '0' || r > '9') }); i >= 0 {
						rec = rec[:i]
					}
					recordsNamed[rec] = append(recordsNamed[rec], where)
					continue
				}
				name := line[loc[0]:loc[1]]
				named[name] = append(named[name], where)
			}
			for _, a := range alertName.FindAllString(line, -1) {
				alertsNamed[a] = append(alertsNamed[a], where)
			}
		}
	}
	var want, readers []string
	for name := range named {
		if declared[name] == nil {
			want = append(want, name)
			readers = append(readers, fmt.Sprintf("%s at %v", name, named[name]))
		}
	}
	slices.Sort(want)
	slices.Sort(readers)
	if len(want) > 0 {
		served := servedSeries(t, want, "the docs name ("+strings.Join(readers, "; ")+")")
		for _, name := range want {
			if _, ok := served[name]; !ok {
				t.Errorf("%v name %s, which no component declares and the binary does not serve", named[name], name)
			}
		}
	}

	_, shipped, records := ruleFileFromPrometheusRule(t)
	for rec, where := range recordsNamed {
		if !slices.ContainsFunc(records, func(r alertRule) bool { return r.name == rec }) {
			t.Errorf("%v name recorded series %s, which components/alerts does not record", where, rec)
		}
	}
	var shippedNames []string
	for _, a := range shipped {
		shippedNames = append(shippedNames, a.name)
	}
	for a, where := range alertsNamed {
		if !slices.Contains(shippedNames, a) {
			t.Errorf("%v name alert %s, which components/alerts does not ship (it has %v)", where, a, shippedNames)
		}
	}
	readme := readDoc(t, "deploy/docs/monitoring.md")
	for _, a := range shippedNames {
		if !strings.Contains(readme, "`"+a+"`") {
			t.Errorf("components/alerts ships %s, which deploy/docs/monitoring.md does not name", a)
		}
	}
}
