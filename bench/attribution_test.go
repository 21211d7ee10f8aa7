// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The categories find the queue's work in a real profile of the gateway.
func TestAttributeGatewayProfile(t *testing.T) {
	p := filepath.Join("results", "gateway-gateway-saturation.pprof")
	if _, err := os.Stat(p); err != nil {
		t.Skip("no stored profile")
	}
	shares, err := attribute(p)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for k, v := range shares {
		t.Logf("%-40s %5.1f%%", k, 100*v)
		sum += v
	}
	if sum < 0.999 || sum > 1.001 {
		t.Errorf("shares sum to %f", sum)
	}
	for _, c := range []string{"read back (queue read + decode)", "persist (queue write + encode, delete)", "gzip", "GC", "decode (receiver)"} {
		if shares[c] < 0.01 {
			t.Errorf("%s: %.1f%% of a profile of the file_storage gateway at saturation", c, 100*shares[c])
		}
	}
}
