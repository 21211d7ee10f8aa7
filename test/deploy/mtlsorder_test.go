// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// The order of components/federation and components/backend-default-mtls.

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// mtlsEnv are the variables components/backend-default-mtls gives each workload.
var mtlsEnv = []string{"OTEL_EXPORTER_DEFAULT_CA_FILE", "OTEL_EXPORTER_DEFAULT_CERT_FILE", "OTEL_EXPORTER_DEFAULT_KEY_FILE"}

// mtlsRefusal is what kustomize says when components/federation comes after
// components/backend-default-mtls.
const mtlsRefusal = "otelcol-relay.io~1backend-default-mtls-applied failed"

// TestDeployBackendDefaultMTLSAfterFederation: components/backend-default-mtls
// patches the StatefulSets there are when it runs. Listed after
// components/federation it gives both the relay and federation the default
// backend's mutual TLS; listed before, it would give federation none, so the
// build refuses that order, with a message the troubleshooting page explains.
// No tracked kustomization or doc example lists it first.
func TestDeployBackendDefaultMTLSAfterFederation(t *testing.T) {
	base, fed, mtls := manifest.Dir("base"), manifest.Dir("components", "federation"), manifest.Dir("components", "backend-default-mtls")
	unset := func(dir, component string) []string {
		t.Helper()
		r := manifest.Render(t, dir)
		env := map[string]bool{}
		for _, e := range r.StatefulSetOf(t, component).Spec.Template.Spec.Containers[0].Env {
			env[e.Name] = true
		}
		return slices.DeleteFunc(slices.Clone(mtlsEnv), func(v string) bool { return env[v] })
	}
	after := manifest.OverlayOf(t, []string{base}, fed, mtls)
	for _, component := range []string{"federation", "gateway"} {
		if missing := unset(after, component); len(missing) > 0 {
			t.Errorf("base + federation then backend-default-mtls: the %s StatefulSet lacks %v", component, missing)
		}
	}
	out, err := exec.Command("kubectl", "kustomize", manifest.OverlayOf(t, []string{base}, mtls, fed)).CombinedOutput()
	switch {
	case err == nil:
		t.Errorf("base + backend-default-mtls then federation renders, federation without the default backend's mTLS")
	case !strings.Contains(string(out), mtlsRefusal) || !strings.Contains(string(out), "components/federation"):
		t.Errorf("base + backend-default-mtls then federation fails, but not with the refusal the docs explain (%q in components/federation):\n%s", mtlsRefusal, out)
	}
	explained := false
	for _, doc := range userDocs(t) {
		explained = explained || strings.Contains(readDoc(t, doc), mtlsRefusal)
	}
	if !explained {
		t.Errorf("no user doc quotes the refusal %q, which a user who lists backend-default-mtls first gets", mtlsRefusal)
	}
	for _, where := range listedBefore(t, "backend-default-mtls", "federation") {
		t.Errorf("%s lists backend-default-mtls before federation, which the build refuses", where)
	}
}

// listedBefore is where a tracked kustomization's `components:`, or a ```yaml
// block of a user doc, lists the component named early before the one named
// late (by folder name: components/<early>, components/<late>).
func listedBefore(t *testing.T, early, late string) []string {
	t.Helper()
	// first reports whether early comes before late in entries, as paths or
	// lines that name them.
	first := func(entries []string) bool {
		name := func(e string) string {
			return path.Base(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(e), "- ")))
		}
		m := slices.IndexFunc(entries, func(e string) bool { return name(e) == early })
		f := slices.IndexFunc(entries, func(e string) bool { return name(e) == late })
		return m >= 0 && f >= 0 && m < f
	}
	var where []string
	for _, f := range gitFiles(t, "*kustomization.yaml") {
		raw, err := os.ReadFile(filepath.Join(e2e.RepoRoot(), f))
		if err != nil {
			t.Fatal(err)
		}
		var k struct {
			Components []string `json:"components"`
		}
		if err := yaml.Unmarshal(raw, &k); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if first(k.Components) {
			where = append(where, fmt.Sprintf("%s (components %v)", f, k.Components))
		}
	}
	for _, doc := range userDocs(t) {
		var block []string
		start, in := 0, false
		for i, line := range strings.Split(readDoc(t, doc), "\n") {
			switch {
			case !in && strings.HasPrefix(line, "```yaml"):
				block, start, in = nil, i+2, true
			case in && strings.HasPrefix(line, "```"):
				in = false
				if first(block) {
					where = append(where, fmt.Sprintf("%s:%d (the yaml block)", doc, start))
				}
			case in:
				// One entry per line, or several in a flow list: [a, b].
				line, _, _ = strings.Cut(line, "#")
				block = append(block, strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == '[' || r == ']' })...)
			}
		}
	}
	return where
}
