// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

// TestMeasure: the bench's runner reports failed checks as the measurement's
// error, stops at a Fatal, and runs cleanups last registered first either way.
func TestMeasure(t *testing.T) {
	var order []string
	err := measure("ok", func(t *runTB) {
		t.Cleanup(func() { order = append(order, "first") })
		t.Cleanup(func() { order = append(order, "second") })
	})
	if err != nil || strings.Join(order, ",") != "second,first" {
		t.Errorf("passing measurement: err %v, cleanups %v", err, order)
	}

	err = measure("checks", func(t *runTB) {
		t.Errorf("lost %d", 3)
		t.Errorf("exit %d", 1)
	})
	if err == nil || err.Error() != "checks: lost 3; exit 1" {
		t.Errorf("failed checks: err %v", err)
	}

	cleaned, after := false, false
	err = measure("fatal", func(t *runTB) {
		t.Cleanup(func() { cleaned = true })
		t.Fatalf("load did not get going: %d", 0) //nolint:revive // unreachable-code: the line after is there to prove that Fatalf stops the function, as testing.T's does
		after = true
	})
	if err == nil || err.Error() != "fatal: load did not get going: 0" || !cleaned || after {
		t.Errorf("fatal: err %v, cleaned %v, went on %v", err, cleaned, after)
	}
}
