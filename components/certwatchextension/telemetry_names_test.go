// SPDX-License-Identifier: Apache-2.0

package certwatchextension

// The names on :8888 that dashboards, deploy/components/alerts and test/e2e
// use; the tests read the generated instruments by them, so metadata.yaml must
// keep them.
const (
	metricReloads      = "otelcol_certwatch_reloads"
	metricLastReload   = "otelcol_certwatch_last_successful_reload_time"
	metricCertNotAfter = "otelcol_certwatch_certificate_not_after"
	metricPendingNB    = "otelcol_certwatch_pending_not_before"
)
