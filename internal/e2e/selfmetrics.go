// SPDX-License-Identifier: Apache-2.0

package e2e

import "github.com/otelcol-relay/otelcol-relay/internal/promtext"

// SelfMetrics is one scrape of a collector's own Prometheus endpoint (:8888).

// ScrapeSelfMetrics reads http://addr/metrics.
func ScrapeSelfMetrics(addr string) (promtext.Families, error) {
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

// SelfMetricsTelemetry is a test config's service::telemetry (indented for its
// place under service:): the collector's own metrics at level normal on
// http://127.0.0.1:$T_METRICS_PORT/metrics, for the test to scrape.
const SelfMetricsTelemetry = `  telemetry:
    metrics:
      level: normal
      readers:
        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: "${env:T_METRICS_PORT}"}}}
`
