// SPDX-License-Identifier: Apache-2.0

// Command dashboards writes otelcol-relay's Grafana dashboards (dashboards.go) into
// deploy/components/dashboards: make dashboards. Its test fails when what is
// committed there differs from what the code builds.
//
// Usage: go run ./hack/dashboards [dir]
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	dir := filepath.Join("deploy", "components", "dashboards")
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := write(dir); err != nil {
		fmt.Fprintln(os.Stderr, "dashboards:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	files, err := build()
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.JSON, 0o644); err != nil {
			return err
		}
	}
	return nil
}
