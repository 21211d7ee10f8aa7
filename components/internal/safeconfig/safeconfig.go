// SPDX-License-Identifier: Apache-2.0

// Package safeconfig is the contract between safeconfigprovider, which reads each
// config file as written, and the converters that check the merged result
// (safeconfigconverter, backendsconverter): the top-level keys the provider
// records for them, the variable names of exporter headers, and what counts as
// a ${...} reference.
package safeconfig // import "github.com/otelcol-relay/otelcol-relay/components/internal/safeconfig"

import "strings"

// HeaderEnvKey is the top-level key under which the provider records, per exporter
// and header, the space-separated names of the environment variables the header
// value is read from. The collector merges it across --config files as it merges
// the headers themselves; safeconfigconverter consumes and removes it.
const HeaderEnvKey = "safeconfig_header_env"

// ListFilesKey is the top-level key under which the provider records each config
// file that sets a list under service:: (extensions, or a pipeline's receivers,
// processors or exporters). Without the confmap.enableMergeAppendOption gate, a
// second such file replaces those lists instead of adding to them; the converter
// refuses that. Paths are map keys so the record survives the merge of files.
const ListFilesKey = "safeconfig_service_list_files"

// ExporterEnvName is the conventional variable for a header of an exporter:
// OTEL_EXPORTER_<NAME>_<HEADER>, upper case, anything outside [A-Z0-9_] as "_".
// id is the exporter's ID or just its name. The provider suggests it and
// backendsconverter reads it, so the two never disagree.
func ExporterEnvName(id, header string) string {
	name := id
	if _, n, ok := strings.Cut(id, "/"); ok {
		name = n
	}
	return "OTEL_EXPORTER_" + envSafe(name) + "_" + envSafe(header)
}

func envSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		default:
			return '_'
		}
	}, s)
}
