// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The CustomResourceDefinitions deploy/overlays/platform's objects are of, from the
// modules of the projects that own them: cert-manager's, trust-manager's Bundle and
// prometheus-operator's monitors and rules.
var platformCRDs = []struct{ module, glob string }{
	{"github.com/cert-manager/cert-manager@v1.21.2", "deploy/crds/*.yaml"},
	{"github.com/cert-manager/trust-manager@v0.25.0", "deploy/crds/trust.cert-manager.io_bundles.yaml"},
	{"github.com/prometheus-operator/prometheus-operator@v0.85.0", "example/prometheus-operator-crd/monitoring.coreos.com_*monitors.yaml"},
	{"github.com/prometheus-operator/prometheus-operator@v0.85.0", "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml"},
}

// InstallPlatformCRDs applies platformCRDs server-side with kubectl (the caller's,
// against its API server) and waits until they are served.
func InstallPlatformCRDs(t testing.TB, kubectl func(args ...string) string) {
	t.Helper()
	apply := []string{"apply", "--server-side", "-o", "name"}
	for _, f := range platformCRDFiles(t) {
		apply = append(apply, "-f", f)
	}
	crds := strings.Fields(kubectl(apply...))
	kubectl(append([]string{"wait", "--for=condition=Established", "--timeout=2m"}, crds...)...)
}

// platformCRDFiles returns the files of platformCRDs, fetched with `go mod download`
// into the shared module cache from a throwaway module, so the project's go.mod
// never changes.
func platformCRDFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, s := range platformCRDs {
		matched, err := filepath.Glob(filepath.Join(moduleDir(t, s.module), s.glob))
		if err != nil || len(matched) == 0 {
			t.Fatalf("%s has no %s (%v)", s.module, s.glob, err)
		}
		files = append(files, matched...)
	}
	return files
}

// moduleDir downloads module@version into the module cache and returns its directory.
func moduleDir(t testing.TB, modVersion string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module crdfetch\n\ngo 1.26\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "mod", "download", "-json", modVersion)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v\n%s", modVersion, err, out)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		t.Fatalf("go mod download %s: %v %s\n%s", modVersion, err, info.Error, out)
	}
	return info.Dir
}
