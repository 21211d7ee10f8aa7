// SPDX-License-Identifier: Apache-2.0

package e2e

import "github.com/otelcol-relay/otelcol-relay/internal/promtext"

// SelfMetrics is one scrape of a collector's own Prometheus endpoint (:8888).
type SelfMetrics = promtext.Families

// ScrapeSelfMetrics reads http://addr/metrics.
func ScrapeSelfMetrics(addr string) (SelfMetrics, error) {
	return promtext.Get("http://" + addr + "/metrics")
}

// LogQueueBytes reads otelcol_exporter_queue_size for logs (bytes, with the
// gateway's sizer) from the collector's own metrics at metricsAddr, summed over
// exporters; -1 when it cannot be read.
func LogQueueBytes(metricsAddr string) float64 {
	m, err := ScrapeSelfMetrics(metricsAddr)
	if err != nil {
		return -1
	}
	v, ok := m.Sum("otelcol_exporter_queue_size", map[string]string{"data_type": "logs"})
	if !ok {
		return -1
	}
	return v
}

// MetricSum sums the samples of the collector's own metric name (its counter or
// gauge family) at metricsAddr; -1 when there is none.
func MetricSum(metricsAddr, name string) float64 {
	m, err := ScrapeSelfMetrics(metricsAddr)
	if err != nil {
		return -1
	}
	v, ok := m.Sum(name, nil)
	if !ok {
		return -1
	}
	return v
}
