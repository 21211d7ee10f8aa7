// SPDX-License-Identifier: Apache-2.0

// Package promtext reads a Prometheus text exposition (a collector's own
// metrics on :8888, a scrape target) with prometheus/common's parser, so tests
// compare values by family and label instead of by line prefix. It is light
// enough for unit tests: no Prometheus client, no Kubernetes.
package promtext

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is one parsed exposition, by family name.
type Families map[string]*dto.MetricFamily

// Parse reads an exposition in the Prometheus text format.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// Get scrapes url (http://host:port/metrics).
func Get(url string) (Families, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return Parse(resp.Body)
}

// unitSuffixes are what the collector's Prometheus exporter appends to a
// metric's name for its unit (and _total for a counter), so a test names the
// metric as the component declares it.
var unitSuffixes = []string{"", "_seconds", "_bytes", "_ratio"}

// Family is the family the component's metric name became: name itself, or name
// with a unit suffix and/or _total; nil when there is none.
func (m Families) Family(name string) *dto.MetricFamily {
	for _, u := range unitSuffixes {
		for _, total := range []string{"", "_total"} {
			if f := m[name+u+total]; f != nil {
				return f
			}
		}
	}
	return nil
}

// Has says whether the family of name is exposed.
func (m Families) Has(name string) bool { return m.Family(name) != nil }

// Sum adds up the counter, gauge or untyped samples of the family of name whose
// labels include every pair in match; found is false when no sample matched.
func (m Families) Sum(name string, match map[string]string) (total float64, found bool) {
	f := m.Family(name)
	if f == nil {
		return 0, false
	}
	for _, s := range f.GetMetric() {
		if !hasLabels(s, match) {
			continue
		}
		switch {
		case s.Counter != nil:
			total += s.Counter.GetValue()
		case s.Gauge != nil:
			total += s.Gauge.GetValue()
		case s.Untyped != nil:
			total += s.Untyped.GetValue()
		default:
			continue
		}
		found = true
	}
	return total, found
}

// Dump renders the families whose name starts with prefix, one sample a line,
// for a failure message.
func (m Families) Dump(prefix string) string {
	var names []string
	for n := range m {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		for _, s := range m[n].GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			v := s.GetCounter().GetValue() + s.GetGauge().GetValue() + s.GetUntyped().GetValue()
			fmt.Fprintf(&b, "%s{%s} %g\n", n, strings.Join(labels, ","), v)
		}
	}
	return b.String()
}

func hasLabels(s *dto.Metric, match map[string]string) bool {
	for k, v := range match {
		ok := false
		for _, l := range s.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
