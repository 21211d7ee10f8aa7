// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"fmt"
	"maps"
	"path/filepath"
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
	name      string
	kustomize func(t *testing.T) string // the kustomization's folder
	release   string
	namespace string
	values    map[string]any
	covers    []string // components and overlays it covers besides those its name lists
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

// exampleBackends is the list deploy/docs/backends.md shows.
var exampleBackends = []any{
	map[string]any{"name": "corp", "endpoint": "https://otlp.corp.example:4317", "protocol": "grpc",
		"headers": []any{"Authorization"},
		"tls":     map[string]any{"ca_file": "/certs/exporter-cas/corp.crt", "cert_file": "/certs/exporter-certs/corp.crt", "key_file": "/certs/exporter-certs/corp.key"}},
	map[string]any{"name": "datadog", "endpoint": "https://otlp.datadoghq.com:4318", "protocol": "http", "headers": []any{"DD-API-KEY"}},
}

// withBackendsFile is a kustomization over inner that sets exampleBackends the way
// a user edits the list: a backends.yaml of its own merged over the component's.
func withBackendsFile(t *testing.T, inner string) string {
	t.Helper()
	dir := t.TempDir()
	b, err := yaml.Marshal(map[string]any{"backends": exampleBackends})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "backends.yaml"), string(b))
	writeKustomization(t, dir, map[string]any{
		"resources":          []string{relTo(t, dir, inner)},
		"configMapGenerator": []any{map[string]any{"name": "otelcol-relay-config", "behavior": "merge", "files": []string{"backends.yaml"}}},
	})
	return dir
}

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// overlay is a kustomization of base and agent with the fields in extra (YAML), as
// a user's own overlay adds them.
func overlay(extra string) func(t *testing.T) string {
	return func(t *testing.T) string {
		dir := t.TempDir()
		k := map[string]any{}
		if err := yaml.Unmarshal([]byte(extra), &k); err != nil {
			t.Fatal(err)
		}
		k["resources"] = []string{relTo(t, dir, manifest.Dir("base")), relTo(t, dir, manifest.Dir("agent"))}
		writeKustomization(t, dir, k)
		return dir
	}
}

// federationWith is base, agent and components/federation, then components.
func federationWith(components ...string) func(t *testing.T) string {
	return withComponents(append([]string{"federation"}, components...)...)
}

// fed is values that turn federation on, with federation's own values f.
func fed(f map[string]any) map[string]any {
	v := map[string]any{"enabled": true}
	maps.Copy(v, f)
	return map[string]any{"federation": v}
}

// merged is a and b's top-level keys together (none in both).
func merged(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

func parityCases() []parityCase {
	on := map[string]any{"enabled": true}
	return []parityCase{
		{name: "default", kustomize: withComponents(), values: map[string]any{}},
		{name: "backend-default-mtls", kustomize: withComponents("backend-default-mtls"),
			values: map[string]any{"defaultBackend": map[string]any{"mtls": on}}},
		{name: "backends", kustomize: withComponents("backends"),
			values: map[string]any{"backends": on}},
		// The list of deploy/docs/backends.md, as a user's copy of backends.yaml has it.
		{name: "backends-list", values: map[string]any{"backends": map[string]any{"list": exampleBackends}},
			kustomize: func(t *testing.T) string { return withBackendsFile(t, withComponents("backends")(t)) }},
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
		{name: "federation", kustomize: federationWith(), values: fed(nil)},
		{name: "federation-shards", kustomize: federationWith("federation-shards"),
			values: fed(map[string]any{"match": []any{`__name__=~"[a-m].*"`, `__name__=~".+",__name__!~"[a-m].*"`}})},
		{name: "federation-plain-http", kustomize: federationWith("federation-plain-http"),
			values: fed(map[string]any{"plainHTTP": true})},
		{name: "federation-backends", kustomize: federationWith("federation-backends"),
			values: fed(map[string]any{"backends": on})},
		{name: "federation+backend-default-mtls", kustomize: federationWith("backend-default-mtls"),
			values: merged(fed(nil), map[string]any{"defaultBackend": map[string]any{"mtls": on}})},
		// The overlay platform teams start from, as shipped.
		{name: "overlays/platform", kustomize: func(*testing.T) string { return manifest.Dir("overlays", "platform") },
			values: map[string]any{
				"certManager": on,
				"monitoring": map[string]any{"serviceMonitor": on, "alerts": on, "dashboards": on,
					"labels": map[string]any{"release": "kube-prometheus-stack"}},
			}},
		{name: "fluent-bit", values: map[string]any{"fluentBit": on},
			kustomize: func(t *testing.T) string {
				return manifest.OverlayOf(t, []string{manifest.Dir("base"), manifest.Dir("agent"), manifest.Dir("fluent-bit")})
			}},
		{name: "overlays/aks", kustomize: func(*testing.T) string { return manifest.Dir("overlays", "aks") },
			values: map[string]any{"agent": map[string]any{"kubeletInsecureSkipVerify": true}}},
		// The image by digest, from a registry of the user's, as a kustomization's
		// images: field sets it.
		{name: "image", values: map[string]any{"image": map[string]any{
			"repository": "registry.example/platform/otelcol-relay", "tag": "v0.2.0", "digest": testDigest}},
			kustomize: overlay(`images:
  - name: localhost/otelcol-relay
    newName: registry.example/platform/otelcol-relay
    newTag: v0.2.0
    digest: ` + testDigest)},
		// Sized for a 50,000-pod cluster as deploy/docs/sizing.md says, with a
		// larger queue volume of a given class and more replicas.
		{name: "sized", values: map[string]any{"relay": map[string]any{
			"resources":   map[string]any{"requests": map[string]any{"cpu": "2", "memory": "768Mi"}, "limits": map[string]any{"memory": "1Gi"}},
			"autoscaling": map[string]any{"minReplicas": 3, "maxReplicas": 20},
			"persistence": map[string]any{"size": "20Gi", "storageClassName": "fast-ssd"},
		}}, kustomize: overlay(`patches:
  - target: {kind: StatefulSet, name: otelcol-relay}
    patch: |-
      - {op: replace, path: /spec/template/spec/containers/0/resources, value: {requests: {cpu: "2", memory: 768Mi}, limits: {memory: 1Gi}}}
      - {op: replace, path: /spec/volumeClaimTemplates/0/spec/resources/requests/storage, value: 20Gi}
      - {op: add, path: /spec/volumeClaimTemplates/0/spec/storageClassName, value: fast-ssd}
  - target: {kind: HorizontalPodAutoscaler, name: otelcol-relay}
    patch: |-
      - {op: replace, path: /spec/minReplicas, value: 3}
      - {op: replace, path: /spec/maxReplicas, value: 20}`)},
		// Both platform overlays, the relay's and fluent-bit's, as one release.
		{name: "overlays/platform+overlays/platform-fluent-bit", covers: []string{"fluent-bit-monitoring"},
			kustomize: func(t *testing.T) string {
				return manifest.OverlayOf(t, []string{manifest.Dir("overlays", "platform"), manifest.Dir("overlays", "platform-fluent-bit")})
			},
			values: map[string]any{
				"certManager": on,
				"fluentBit":   on,
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
var generatedName = regexp.MustCompile(`^(.*-(config|shards))-[a-z0-9]{10}$`)

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
//   - the order of volumes, volume mounts and env, which means nothing to the
//     kubelet but for $(VAR) in an env value, which expands only a variable defined
//     before it: envOrderHolds checks that on each render before env is sorted.
//     (kustomize's strategic merge patches move a patched variable to the front.)
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
				c := c.(map[string]any)
				envOrderHolds(t, fmt.Sprintf("%v %v", o["kind"], meta["name"]), c)
				sortByName(c, "volumeMounts")
				sortByName(c, "env")
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

// varRef is a $(VAR) reference in an env value, which the kubelet expands.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// envOrderHolds fails the test when an env value of container c refers to a
// variable that is not defined before it.
func envOrderHolds(t *testing.T, object string, c map[string]any) {
	t.Helper()
	env, _ := c["env"].([]any)
	defined := map[string]bool{}
	for _, e := range env {
		e := e.(map[string]any)
		if v, ok := e["value"].(string); ok {
			for _, m := range varRef.FindAllStringSubmatch(v, -1) {
				if !defined[m[1]] {
					t.Errorf("%s: env %v refers to $(%s), which is not defined before it", object, e["name"], m[1])
				}
			}
		}
		defined[fmt.Sprint(e["name"])] = true
	}
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
