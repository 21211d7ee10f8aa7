// SPDX-License-Identifier: Apache-2.0

package safeconfigconverter

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// checkEnvCollisions rejects two backends that read a header from the same
// variable: one Secret's credential would go to both, typically after a
// copy-pasted fragment. Exporters of one backend (otlp_grpc/x and otlp_http/x)
// may share.
func checkEnvCollisions(exporters, headerEnvs map[string]any) []error {
	type use struct{ id, header string }
	users := map[string][]use{}
	for _, id := range slices.Sorted(maps.Keys(headerEnvs)) {
		if !hasKey(exporters, id) { // overridden away by a later file
			continue
		}
		hs := asMap(headerEnvs[id])
		for _, h := range slices.Sorted(maps.Keys(hs)) {
			s, _ := hs[h].(string)
			for _, env := range strings.Fields(s) {
				users[env] = append(users[env], use{id, h})
			}
		}
	}
	var errs []error
	for _, env := range slices.Sorted(maps.Keys(users)) {
		us := users[env]
		backends := map[string]bool{}
		var where []string
		for _, u := range us {
			_, name := splitID(u.id)
			backends[name] = true
			where = append(where, fmt.Sprintf("exporters::%s: headers::%s", u.id, u.header))
		}
		if len(backends) > 1 {
			errs = append(errs, fmt.Errorf("environment variable %s is read by more than one backend (%s): each backend needs its own Secret-backed variable, named OTEL_EXPORTER_<NAME>_<HEADER>", env, strings.Join(where, "; ")))
		}
	}
	return errs
}
