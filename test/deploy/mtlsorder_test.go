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

// TestDeployBackendDefaultMTLSAfterFederation: components/backend-default-mtls
// patches the StatefulSets there are when it runs, so listed before
// components/federation it leaves federation's default backend header-only, and
// kustomize says nothing. While the order matters, a user doc says so, the
// component's own comment says to list it after federation, and no
// kustomization or doc example in the repository lists it first.
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
	after, before := manifest.OverlayOf(t, []string{base}, fed, mtls), manifest.OverlayOf(t, []string{base}, mtls, fed)
	for _, o := range []struct{ name, dir, component string }{
		{"federation then backend-default-mtls", after, "federation"},
		{"federation then backend-default-mtls", after, "gateway"},
		{"backend-default-mtls then federation", before, "gateway"},
	} {
		if missing := unset(o.dir, o.component); len(missing) > 0 {
			t.Fatalf("base + %s: the %s StatefulSet lacks %v", o.name, o.component, missing)
		}
	}
	missing := unset(before, "federation")
	if len(missing) == 0 {
		t.Log("backend-default-mtls reaches federation in either order: the order no longer matters")
		return
	}
	silent := fmt.Sprintf("base + backend-default-mtls then federation renders without an error and federation's StatefulSet lacks %v", missing)

	warned := false
	for _, doc := range userDocs(t) {
		for _, para := range strings.Split(readDoc(t, doc), "\n\n") {
			para = strings.Join(strings.Fields(para), " ")
			warned = warned || strings.Contains(para, "backend-default-mtls") && strings.Contains(para, "before `federation`")
		}
	}
	if !warned {
		t.Errorf("%s, and no user doc has a paragraph that names backend-default-mtls listed before `federation`", silent)
	}
	if c := readDoc(t, "deploy/components/backend-default-mtls/kustomization.yaml"); !strings.Contains(c, "list this after ../federation") {
		t.Errorf("%s, and deploy/components/backend-default-mtls/kustomization.yaml does not say \"list this after ../federation\"", silent)
	}
	for _, where := range mtlsListedFirst(t) {
		t.Errorf("%s: %s lists backend-default-mtls before federation", silent, where)
	}
}

// mtlsListedFirst is where a tracked kustomization's `components:`, or a ```yaml
// block of a user doc, lists components/backend-default-mtls before
// components/federation.
func mtlsListedFirst(t *testing.T) []string {
	t.Helper()
	// first reports whether backend-default-mtls comes before federation in
	// entries, as paths or lines that name them.
	first := func(entries []string) bool {
		name := func(e string) string {
			return path.Base(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(e), "- ")))
		}
		m := slices.IndexFunc(entries, func(e string) bool { return name(e) == "backend-default-mtls" })
		f := slices.IndexFunc(entries, func(e string) bool { return name(e) == "federation" })
		return m >= 0 && f >= 0 && m < f
	}
	cmd := exec.Command("git", "ls-files", "*kustomization.yaml")
	cmd.Dir = e2e.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var where []string
	for _, f := range strings.Fields(string(out)) {
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
