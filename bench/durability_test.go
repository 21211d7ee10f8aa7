package main

import (
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
