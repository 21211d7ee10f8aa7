// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// TestMain settles the collector binary once (OTELCOL_RELAY_BIN from make, or make
// build), so every test in the package runs the same one.
func TestMain(m *testing.M) { e2e.Main(m) }
