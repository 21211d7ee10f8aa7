package e2e

import (
	"fmt"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// SelfMetrics is one scrape of a collector's own Prometheus endpoint (:8888).
type SelfMetrics map[string]*dto.MetricFamily

// ScrapeSelfMetrics reads http://addr/metrics.
func ScrapeSelfMetrics(addr string) (SelfMetrics, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", addr, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// Sum adds up the counter or gauge samples of family name whose labels include
// every pair in match; found is false when no sample matched.
func (m SelfMetrics) Sum(name string, match map[string]string) (total float64, found bool) {
	f := m[name]
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
