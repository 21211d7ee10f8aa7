// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryImportsNoTestHarness: internal/ holds test harnesses (internal/README.md);
// the binary, and every component it is built from, must not depend on one, or test
// code ships in the image.
func TestBinaryImportsNoTestHarness(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("go", "list", "-deps", "./cmd/otelcol-relay")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/otelcol-relay: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/otelcol-relay/otelcol-relay/internal/") {
			t.Errorf("the binary depends on the test harness %s: move what it needs under components/internal", p)
		}
	}
}
