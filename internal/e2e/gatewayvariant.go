// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// gatewayEdit replaces old, which must be in the text exactly n times, by new:
// a variant fails loudly when config/gateway.yaml changes under it.
type gatewayEdit struct {
	old, new string
	n        int
}

// shippedGateway is config/gateway.yaml as the repository has it.
func shippedGateway() (string, error) {
	gw, err := os.ReadFile(filepath.Join(RepoRoot(), "config", "gateway.yaml"))
	return string(gw), err
}

// editGateway applies edits in order; variant names it in errors.
func editGateway(variant, text string, edits []gatewayEdit) (string, error) {
	for _, e := range edits {
		if got := strings.Count(text, e.old); got != e.n {
			return "", fmt.Errorf("%s: %q is in config/gateway.yaml %d times, want %d", variant, e.old, got, e.n)
		}
		text = strings.ReplaceAll(text, e.old, e.new)
	}
	return text, nil
}

// writeGatewayVariant writes what yaml returns into dir/name and returns the file.
func writeGatewayVariant(dir, name string, yaml func() (string, error)) (string, error) {
	text, err := yaml()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, []byte(text), 0o644)
}
