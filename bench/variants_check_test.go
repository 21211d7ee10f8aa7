// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

func TestVariantConfigsApply(t *testing.T) {
	for v := range variantInfo {
		if isFloor(v) {
			continue
		}
		if _, err := variantConfig(v, t.TempDir()); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
}

// Run suffixes change how a variant runs and leave its config to the base name,
// in any combination.
func TestRunSuffixes(t *testing.T) {
	for _, c := range []struct {
		v, base    string
		env, flags int
		alt        bool
	}{
		{"gateway", "gateway", 0, 0, false},
		{"gateway-madvfree", "gateway", 1, 0, false},
		{"gateway-memory-protopool", "gateway-memory", 0, 1, false},
		{"gateway-alt", "gateway", 0, 0, true},
		{"gateway-memory-madvfree-alt", "gateway-memory", 1, 0, true},
		{"gateway-memory-512mi", "gateway-memory", 0, 0, false},
	} {
		base, _ := splitVariant(c.v)
		if base != c.base || len(variantEnv(c.v)) != c.env || len(variantFlags(c.v)) != c.flags || runsAlt(c.v) != c.alt {
			t.Errorf("%s: base %q env %q flags %q alt %v", c.v, base, variantEnv(c.v), variantFlags(c.v), runsAlt(c.v))
		}
		if want := int64(0); strings.HasSuffix(c.v, "-512mi") != (variantMemLimit(c.v) > want) {
			t.Errorf("%s: memory limit %d", c.v, variantMemLimit(c.v))
		}
	}
}

// Every run suffix is described, in any order and combination.
func TestDescribeSuffixedVariants(t *testing.T) {
	for v, want := range map[string][]string{
		"gateway-memory-512mi":   {variantInfo["gateway-memory"], "512 MiB memory cgroup"},
		"gateway-512mi-madvfree": {variantInfo["gateway"], "512 MiB memory cgroup", "GODEBUG=madvdontneed=0"},
		"gateway-madvfree-alt":   {variantInfo["gateway-madvfree"], "run on another build"},
	} {
		d := describeVariant(v)
		for _, w := range want {
			if !strings.Contains(d, w) {
				t.Errorf("%s: %q lacks %q", v, d, w)
			}
		}
	}
}
