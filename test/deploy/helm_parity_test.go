// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// parityCase is one kustomize install and the values that give the chart's
// equivalent of it.
type parityCase struct {
	name       string
	kustomize  func(t *testing.T) string // the kustomization's folder
	release    string
	namespace  string
	values     map[string]any
	components []string // deploy/components covered, for the page that maps them
}

// withComponents is base and agent, as deploy/overlays include them, with components.
func withComponents(components ...string) func(t *testing.T) string {
	return func(t *testing.T) string {
		var dirs []string
		for _, c := range components {
			dirs = append(dirs, manifest.Dir("components", c))
		}
		return manifest.OverlayOf(t, []string{manifest.Dir("base"), manifest.Dir("agent")}, dirs...)
	}
}

func parityCases() []parityCase {
	on := map[string]any{"enabled": true}
	return []parityCase{
		{name: "default", kustomize: withComponents(), values: map[string]any{}},
		{name: "backend-default-mtls", kustomize: withComponents("backend-default-mtls"),
			values: map[string]any{"defaultBackend": map[string]any{"mtls": on}}},
		{name: "backends", kustomize: withComponents("backends"),
			values: map[string]any{"backends": on}},
		{name: "cert-manager", kustomize: withComponents("cert-manager"),
			values: map[string]any{"certManager": on}},
		{name: "priority-class", kustomize: withComponents("priority-class"),
			values: map[string]any{"priorityClass": on}},
		{name: "servicemonitor", kustomize: withComponents("servicemonitor"),
			values: map[string]any{"monitoring": map[string]any{"serviceMonitor": on}}},
		{name: "alerts", kustomize: withComponents("alerts"),
			values: map[string]any{"monitoring": map[string]any{"alerts": on}}},
		{name: "dashboards", kustomize: withComponents("dashboards"),
			values: map[string]any{"monitoring": map[string]any{"dashboards": on}}},
		// The overlay platform teams start from, as shipped.
		{name: "overlays/platform", kustomize: func(*testing.T) string { return manifest.Dir("overlays", "platform") },
			values: map[string]any{
				"certManager": on,
				"monitoring": map[string]any{"serviceMonitor": on, "alerts": on, "dashboards": on,
					"labels": map[string]any{"release": "kube-prometheus-stack"}},
			}},
		// An install moved as deploy/README.md says: namespace and namePrefix, against
		// a release of that name in that namespace.
		{name: "moved", release: "team-a", namespace: "telemetry",
			kustomize: func(t *testing.T) string {
				return manifest.MovedTo(t, withComponents("cert-manager", "backends")(t), "telemetry", "team-a-")
			},
			values: map[string]any{"certManager": on, "backends": on}},
	}
}

// TestChartRendersWhatKustomizeRenders: for each kustomize install and the values
// that mean the same, `helm template` renders the same objects as `kubectl
// kustomize`, compared field by field after the normalisation below. Each
// difference normalise removes is listed there with why; any other fails.
func TestChartRendersWhatKustomizeRenders(t *testing.T) {
	for _, c := range parityCases() {
		t.Run(strings.ReplaceAll(c.name, "/", "-"), func(t *testing.T) {
			release, ns := c.release, c.namespace
			if release == "" {
				release, ns = "otelcol-relay", "otelcol-relay"
			}
			want := normalised(t, manifest.Docs(t, c.kustomize(t)))
			got := normalised(t, manifest.HelmTemplate(t, release, ns, c.values))
			for _, k := range slices.Sorted(maps.Keys(want)) {
				if _, ok := got[k]; !ok {
					t.Errorf("%s: kustomize renders it, the chart does not", k)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(got)) {
				w, ok := want[k]
				if !ok {
					t.Errorf("%s: the chart renders it, kustomize does not", k)
					continue
				}
				if d := cmp.Diff(w, got[k]); d != "" {
					t.Errorf("%s differs (-kustomize +helm):\n%s", k, d)
				}
			}
			t.Logf("%d objects, the same in both", len(got))
		})
	}
}

// generatedName is a configMapGenerator's name: the base name and a hash of the
// content, which kustomize and the chart compute differently.
var generatedName = regexp.MustCompile(`^(.*-(agent-)?config)-[a-z0-9]{10}$`)

// normalised decodes docs into objects keyed by kind, namespace and name, after
// taking out what differs by design:
//   - the Namespace: helm installs into a namespace that exists (--create-namespace),
//     and never owns it, so that `helm uninstall` cannot delete the namespace and what
//     else runs there. components/cert-manager's label on it
//     (otelcol-relay.io/ca-bundle, for trust-manager) is put on by the user instead
//     (deploy/docs/helm.md).
//   - helm's labels (managed-by, instance, chart) in metadata: which release owns the
//     object. Never in selectors or pod templates.
//   - generated ConfigMaps' hash suffixes: both add one of the content, computed
//     differently; the content is compared.
//   - ConfigMap data that is YAML is compared as YAML: the chart writes the backends
//     list from values, without the example file's comments.
//   - the order of volumes and volume mounts, which means nothing; env's order is
//     kept, since $(VAR) expands only what comes before it.
func normalised(t *testing.T, docs []string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, doc := range docs {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if o == nil {
			continue
		}
		if o["kind"] == "Namespace" {
			continue
		}
		meta, _ := o["metadata"].(map[string]any)
		if labels, ok := meta["labels"].(map[string]any); ok {
			for _, l := range []string{"app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart"} {
				delete(labels, l)
			}
			if len(labels) == 0 {
				delete(meta, "labels")
			}
		}
		o = rewriteStrings(o, func(s string) string {
			return generatedName.ReplaceAllString(s, "$1-<hash>")
		}).(map[string]any)
		meta, _ = o["metadata"].(map[string]any)
		if o["kind"] == "ConfigMap" {
			if data, ok := o["data"].(map[string]any); ok {
				for k, v := range data {
					if s, ok := v.(string); ok && strings.HasSuffix(k, ".yaml") {
						var parsed any
						if err := yaml.Unmarshal([]byte(s), &parsed); err != nil {
							t.Fatalf("ConfigMap %v key %s: %v", meta["name"], k, err)
						}
						data[k] = parsed
					}
				}
			}
		}
		sortByName(o, "spec", "template", "spec", "volumes")
		if containers, ok := dig(o, "spec", "template", "spec", "containers").([]any); ok {
			for _, c := range containers {
				sortByName(c.(map[string]any), "volumeMounts")
			}
		}
		key := fmt.Sprintf("%v %v/%v", o["kind"], meta["namespace"], meta["name"])
		if _, dup := out[key]; dup {
			t.Fatalf("%s twice", key)
		}
		out[key] = o
	}
	return out
}

func rewriteStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = rewriteStrings(e, f)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = rewriteStrings(e, f)
		}
		return x
	case string:
		return f(x)
	}
	return v
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// sortByName sorts the list at path in o by each entry's name.
func sortByName(o map[string]any, path ...string) {
	parent, ok := dig(o, path[:len(path)-1]...).(map[string]any)
	if !ok {
		return
	}
	list, ok := parent[path[len(path)-1]].([]any)
	if !ok {
		return
	}
	sort.SliceStable(list, func(i, j int) bool {
		return fmt.Sprint(list[i].(map[string]any)["name"]) < fmt.Sprint(list[j].(map[string]any)["name"])
	})
}
