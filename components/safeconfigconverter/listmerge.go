// SPDX-License-Identifier: Apache-2.0

package safeconfigconverter

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/featuregate"
)

// mergeAppendGate makes the resolver append lists from several --config files
// instead of letting the last file's list replace the others'.
const mergeAppendGate = "confmap.enableMergeAppendOption"

func mergeAppendEnabled() bool {
	on := false
	featuregate.GlobalRegistry().VisitAll(func(g *featuregate.Gate) {
		if g.ID() == mergeAppendGate {
			on = g.IsEnabled()
		}
	})
	return on
}

// checkListMerge refuses two config files that both set service lists when those
// lists would be replaced rather than appended: a backend fragment would silently
// take the default backend out of the logs pipeline (or its certwatch out of
// service::extensions).
func checkListMerge(listFiles map[string]any, appendOn bool) error {
	if appendOn || len(listFiles) < 2 {
		return nil
	}
	return fmt.Errorf("config files %s each set lists under service:: (extensions, or pipeline receivers, processors or exporters), and without the %s feature gate the last file's lists replace the others' instead of adding to them: run with --feature-gates=%s (it appends extensions, receivers and exporters; a processors list is replaced either way, so write a pipeline's whole list)", strings.Join(slices.Sorted(maps.Keys(listFiles)), ", "), mergeAppendGate, mergeAppendGate)
}
