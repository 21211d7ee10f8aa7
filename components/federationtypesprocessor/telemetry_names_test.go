// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

// The names on :8888 that dashboards and deploy/components/alerts use; the
// tests read the generated instruments by them, so metadata.yaml must keep them.
const (
	metricFamiliesRetyped = "otelcol_processor_federation_types_families_retyped"
	metricAmbiguous       = "otelcol_processor_federation_types_ambiguous_families"
	metricMetadataAge     = "otelcol_processor_federation_types_metadata_age"
	metricRefreshFailures = "otelcol_processor_federation_types_metadata_refresh_failures"
)
