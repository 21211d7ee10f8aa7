// SPDX-License-Identifier: Apache-2.0

package manifest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// HelmBinEnv names the helm binary the tests run: hack/tools.sh helm builds it, and
// hack/test.sh sets this variable.
const HelmBinEnv = "HELM"

// Helm is the path of the helm binary, or a failed test that says how to build it.
func Helm(t tb.T) string {
	t.Helper()
	h := os.Getenv(HelmBinEnv)
	if h == "" {
		t.Fatalf("%s is unset: build helm with hack/tools.sh helm (make test does) and set %s to its path", HelmBinEnv, HelmBinEnv)
	}
	return h
}

// Chart is the chart's folder in the repository.
func Chart() string { return Dir("helm", "otelcol-relay") }

// HelmTemplate is what `helm template release chart -n namespace -f values` renders,
// split into documents: values as a user writes them in a values file.
func HelmTemplate(t tb.T, release, namespace string, values map[string]any) []string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := helmCmd(t, release, namespace, values, "template", &stdout, &stderr).Run(); err != nil {
		t.Fatalf("helm template %s: %v\n%s", release, err, stderr.String())
	}
	out := stdout.String()
	var docs []string
	for _, d := range strings.Split(out, "\n---\n") {
		if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(d), "---")) != "" {
			docs = append(docs, d)
		}
	}
	return docs
}

// RunHelm runs `helm verb release chart -n namespace -f values.yaml` and returns its
// combined output: a test of a refused value reads the error from it.
func RunHelm(t tb.T, release, namespace string, values map[string]any, verb string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := helmCmd(t, release, namespace, values, verb, &out, &out, args...).Run()
	return out.String(), err
}

// helmCmd is `helm verb release chart -n namespace -f values.yaml args...`, bounded
// by two minutes (the test's cleanup cancels it).
func helmCmd(t tb.T, release, namespace string, values map[string]any, verb string, stdout, stderr *bytes.Buffer, args ...string) *exec.Cmd {
	t.Helper()
	f := WriteValues(t, values)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, Helm(t), append([]string{verb, release, Chart(), "-n", namespace, "-f", f}, args...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd
}

// WriteValues writes values as a values file in a directory of the test's and
// returns its path.
func WriteValues(t tb.T, values map[string]any) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "values.yaml")
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
