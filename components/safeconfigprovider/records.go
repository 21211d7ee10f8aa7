// SPDX-License-Identifier: Apache-2.0

package safeconfigprovider

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/otelcol-relay/otelcol-relay/components/internal/safeconfig"
)

// ottlTypes are processors whose settings are OTTL statements, conditions or
// patterns applied to every record. A ${env:...} or ${file:...} in them is
// expanded before the processor sees it, so it would put a Secret's value into
// a statement that can write it into records bound for a backend.
var ottlTypes = map[string]bool{"filter": true, "transform": true, "redaction": true}

// valueTypes are processors that write the values they are given into records.
// A reference is how they take a cluster's name from the environment, so an
// env reference is allowed unless its name marks a credential.
var valueTypes = map[string]bool{"attributes": true, "resource": true}

// checkRecordProcessing returns an error for every reference in a record
// processor's settings or a backend's route condition that could carry a
// credential into records. Errors name the field and the reference, never a value.
func checkRecordProcessing(doc map[string]any) []error {
	var errs []error
	procs, _ := doc["processors"].(map[string]any)
	for _, id := range slices.Sorted(maps.Keys(procs)) {
		typ, _, _ := strings.Cut(id, "/")
		switch {
		case ottlTypes[typ]:
			walk(procs[id], "processors::"+id, func(path, key string, v any) {
				if strings.EqualFold(key, "hmac_key") {
					return // redaction's key is a credential: checkCredential wants a reference
				}
				for _, r := range refsIn(v) {
					errs = append(errs, fmt.Errorf("%s reads ${%s:%s}: a %s processor's statements and patterns may not read the environment or files (the value would be applied to, and can be written into, every record); write the value itself", path, r.Scheme, r.Name, typ))
				}
			})
		case valueTypes[typ]:
			walk(procs[id], "processors::"+id, func(path, _ string, v any) {
				for _, r := range refsIn(v) {
					if r.Scheme == "env" && !credentialVariable(r.Name) {
						continue
					}
					what := "which looks like a credential"
					if r.Scheme != "env" {
						what = "a file (Secrets are mounted as files)"
					}
					errs = append(errs, fmt.Errorf("%s reads ${%s:%s}, %s: a %s processor writes its values into records sent to the backends; only non-secret environment variables may be read here", path, r.Scheme, r.Name, what, typ))
				}
			})
		}
	}
	// walk names each entry as the other rules do: backends[i] (name).
	walk(doc[safeconfig.BackendsKey], safeconfig.BackendsKey, func(path, key string, v any) {
		if key != "condition" || parentKey(path) != "route" || strings.Count(path, "::") != 2 {
			return
		}
		for _, r := range refsIn(v) {
			errs = append(errs, fmt.Errorf("%s reads ${%s:%s}: a route condition may not read the environment or files; write the value itself", path, r.Scheme, r.Name))
		}
	})
	return errs
}

func refsIn(v any) []safeconfig.Ref {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	refs, _ := safeconfig.Scan(s)
	return refs
}

// credentialVariable reports whether an environment variable's name says it
// holds a credential: a word such as TOKEN, PASSWORD or KEY, or the backends'
// header convention OTEL_EXPORTER_<NAME>_<HEADER>.
func credentialVariable(name string) bool {
	return strings.HasPrefix(strings.ToUpper(name), "OTEL_EXPORTER_") || credentialHeader.MatchString(name)
}
