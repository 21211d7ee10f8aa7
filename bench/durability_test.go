// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"slices"
	"testing"
)

// A ratio pairs the runs of one round, not the medians of all rounds.
func TestPairedRatios(t *testing.T) {
	sat := func(x *runResult) float64 { return x.SatCPUsPerM }
	r := &report{}
	// Round 2 ran on a slow machine for both variants; round 3's base is missing.
	for _, x := range []struct {
		v   string
		cpu float64
	}{
		{"gateway", 11}, {"gateway-memory", 10},
		{"gateway-memory", 20}, {"gateway", 21},
		{"gateway", 12},
	} {
		r.Runs = append(r.Runs, &runResult{Variant: x.v, SatCPUsPerM: x.cpu})
	}
	got := r.pairedRatios("gateway", "gateway-memory", sat)
	if want := []float64{1.1, 1.05}; !slices.Equal(got, want) {
		t.Fatalf("paired ratios %v, want %v", got, want)
	}
	if c := ratioCell(got); c != "1.10x [1.05–1.10]" {
		t.Errorf("cell %q", c)
	}
	if c := ratioCell(nil); c != "-" {
		t.Errorf("empty cell %q", c)
	}
}

func TestIntervalCell(t *testing.T) {
	if c := intervalCell([]float64{1.1, 1.05, 1.2, 1.0}); c != "-" {
		t.Errorf("4 rounds: %q, want no interval", c)
	}
	if c := intervalCell([]float64{1.1, 1.1, 1.1, 1.1, 1.1}); c != "1.10–1.10" {
		t.Errorf("identical rounds: %q", c)
	}
	// 21 rounds around 1.09 with two far outliers: the interval holds the
	// median, stays inside the rounds' range, ignores the outliers, and is
	// the same every time.
	v := []float64{1.09, 1.02, 1.15, 0.98, 1.12, 1.05, 1.09, 1.20, 1.01, 1.11, 1.07, 1.13, 1.04, 1.10, 1.08, 1.06, 1.16, 1.03, 1.14, 0.70, 1.90}
	c := intervalCell(v)
	var lo, hi float64
	if _, err := fmt.Sscanf(c, "%f–%f", &lo, &hi); err != nil {
		t.Fatalf("cell %q: %v", c, err)
	}
	if !(lo < 1.09 && 1.09 < hi && lo >= 1.0 && hi <= 1.16) {
		t.Errorf("interval %q for a median of 1.09", c)
	}
	if again := intervalCell(v); again != c {
		t.Errorf("not reproducible: %q then %q", c, again)
	}
}
