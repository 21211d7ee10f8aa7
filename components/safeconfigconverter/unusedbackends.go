// SPDX-License-Identifier: Apache-2.0

package safeconfigconverter

import (
	"fmt"
	"maps"
	"slices"
)

// checkUnusedBackends rejects a backend exporter that no pipeline sends to. Merging
// a backend fragment with a second --config replaces list values such as
// service::pipelines::logs::exporters unless the confmap.enableMergeAppendOption
// feature gate is on; this turns that silent loss of a backend into an error.
func checkUnusedBackends(exporters, pipelines map[string]any) []error {
	used := map[string]bool{}
	for _, p := range pipelines {
		for _, e := range asList(asMap(p)["exporters"]) {
			if s, ok := e.(string); ok {
				used[s] = true
			}
		}
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(exporters)) {
		if t, _ := splitID(id); backendTypes[t] != "" && !used[id] {
			errs = append(errs, fmt.Errorf("exporters::%s: no pipeline in service::pipelines sends to it; if it was added with a second --config, run with --feature-gates=confmap.enableMergeAppendOption so that pipeline exporter lists are appended, not replaced", id))
		}
	}
	return errs
}
