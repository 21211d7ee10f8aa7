// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// TestMain builds the collector once (or takes OTELCOL_RELAY_BIN from `make test`)
// so every end-to-end test in this package runs the same binary.
func TestMain(m *testing.M) {
	if _, err := e2e.EnsureBinary(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
