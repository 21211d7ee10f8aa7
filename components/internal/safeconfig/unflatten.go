// SPDX-License-Identifier: Apache-2.0

package safeconfig

import (
	"fmt"
	"maps"
	"slices"

	"go.opentelemetry.io/collector/confmap"
)

// BackendsKey is the top-level list that backendsconverter expands into
// exporters. Its entries are lifted out of the list into maps, so they are read
// the way confmap reads maps (Unflatten).
const BackendsKey = "backends"

// Unflatten returns v with its keys as the collector reads them. confmap stores
// a config flat, with its paths joined by confmap.KeyDelimiter ("::"), and
// unflattens it again for the components, so {"headers::X-Api-Key": v} and
// {headers: {X-Api-Key: v}} are one config to the collector. Rules that read a
// config by its keys must read this form.
//
// confmap leaves the maps inside lists as written. Unflatten unflattens them
// too: backendsconverter moves backends entries out of their list into maps,
// where confmap unflattens them later, and a "::" key inside any other list is
// no field of the component that reads it (its unmarshalling refuses it).
// v is not modified.
func Unflatten(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := confmap.NewFromStringMap(t).ToStringMap()
		for k, e := range m {
			m[k] = Unflatten(e)
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Unflatten(e)
		}
		return out
	}
	return v
}

// Ambiguous returns the paths that v sets more than once, spelt differently:
// {"tls::ca_file": a, tls: {ca_file: b}}. confmap flattens both to one key and
// keeps one value, which one depending on where they are (at the top level the
// flat key wins, below it Go's map order decides), so what runs may differ from
// what a rule checked. Paths are "::"-joined, list elements [i]. A value and a
// map under one path are not ambiguous: koanf's Unflatten sorts the keys and
// the map wins.
func Ambiguous(v any) []string {
	var out []string
	ambiguous(v, "", &out)
	slices.Sort(out)
	return slices.Compact(out)
}

func ambiguous(v any, path string, out *[]string) {
	switch t := v.(type) {
	case map[string]any:
		leaves := map[string]bool{} // the flat paths set below this map
		var walk func(m map[string]any, prefix string)
		walk = func(m map[string]any, prefix string) {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				p := join(prefix, k)
				sub, isMap := m[k].(map[string]any)
				if isMap && len(sub) > 0 {
					walk(sub, p)
					continue
				}
				if _, seen := leaves[p]; seen {
					*out = append(*out, join(path, p))
				}
				leaves[p] = true
				ambiguous(m[k], join(path, p), out)
			}
		}
		walk(t, "")
	case []any:
		for i, e := range t {
			ambiguous(e, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + confmap.KeyDelimiter + k
}
