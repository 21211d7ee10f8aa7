package main

import "testing"

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
