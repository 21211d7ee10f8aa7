// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// notInChart are the parts of deploy/ the chart has no values for, and why.
var notInChart = map[string]string{
	"overlays/example-backend": "a hand-written exporter for one extra backend, from before components/backends; " +
		"the chart's backends.list does the same (case backends-list)",
	"overlays/tigera": "rendered by the Tigera operator for Calico Enterprise, with its own CA bundle and " +
		"NetworkPolicy patches; not an install a user makes with helm",
}

// TestChartCoversEveryComponent: each kustomize component and overlay of deploy/
// has a case of TestChartRendersWhatKustomizeRenders, or a reason in notInChart.
// A new component without either fails here, not in a user's install.
func TestChartCoversEveryComponent(t *testing.T) {
	var cases []string
	for _, c := range parityCases() {
		cases = append(cases, strings.Split(c.name, "+")...)
		cases = append(cases, c.covers...)
	}
	for _, parent := range []string{"components", "overlays"} {
		entries, err := os.ReadDir(manifest.Dir(parent))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if parent == "overlays" {
				name = "overlays/" + name
			}
			covered := slices.Contains(cases, name)
			_, excused := notInChart[name]
			switch {
			case covered && excused:
				t.Errorf("%s: both a parity case and in notInChart", name)
			case !covered && !excused:
				t.Errorf("%s: no parity case of the chart and no reason in notInChart", name)
			}
		}
	}
}

// TestChartLints: `helm lint --strict` passes with the defaults and with every
// part turned on.
func TestChartLints(t *testing.T) {
	on := map[string]any{"enabled": true}
	for name, values := range map[string]map[string]any{
		"defaults": {},
		"everything": {
			"certManager": on, "priorityClass": on, "fluentBit": on,
			"defaultBackend": map[string]any{"mtls": on},
			"backends":       map[string]any{"list": exampleBackends},
			"federation":     map[string]any{"enabled": true, "plainHTTP": true, "backends": on},
			"monitoring":     map[string]any{"serviceMonitor": on, "alerts": on, "dashboards": on},
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := manifest.WriteValues(t, values)
			out, err := exec.Command(manifest.Helm(t), "lint", "--strict", manifest.Chart(), "-f", f).CombinedOutput()
			if err != nil {
				t.Fatalf("helm lint --strict: %v\n%s", err, out)
			}
		})
	}
}

// TestChartSchemaRefuses: a typo or a wrong type in a values file stops `helm
// template` (and so install and upgrade) with a message that names the key.
func TestChartSchemaRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		values map[string]any
		want   []string // in the message
	}{
		{"unknown key", map[string]any{"relay": map[string]any{"replica": 3}}, []string{"replica"}},
		{"unknown top-level key", map[string]any{"backend": map[string]any{}}, []string{"backend"}},
		{"wrong type", map[string]any{"relay": map[string]any{"replicas": "three"}}, []string{"/relay/replicas", "integer"}},
		{"not one of", map[string]any{"relay": map[string]any{"persistence": map[string]any{"whenScaled": "Keep"}}},
			[]string{"/relay/persistence/whenScaled", "Retain"}},
		{"backend without endpoint", map[string]any{"backends": map[string]any{"list": []any{map[string]any{"name": "corp"}}}},
			[]string{"/backends/list/0", "endpoint"}},
		{"backend name not a DNS label", map[string]any{"backends": map[string]any{"list": []any{
			map[string]any{"name": "Corp_1", "endpoint": "https://x:4317"}}}}, []string{"/backends/list/0/name"}},
		{"backend key typo", map[string]any{"backends": map[string]any{"list": []any{
			map[string]any{"name": "corp", "endpoint": "https://x:4317", "header": []any{"A"}}}}}, []string{"header"}},
		{"memory not a quantity", map[string]any{"relay": map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "1 GB"}}}},
			[]string{"/relay/resources/limits/memory"}},
		{"digest not sha256", map[string]any{"image": map[string]any{"digest": "latest"}}, []string{"/image/digest"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := manifest.RunHelm(t, "otelcol-relay", "otelcol-relay", c.values, "template")
			if err == nil {
				t.Fatalf("helm template accepted %v", c.values)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("the message does not name %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestChartRendersNoSecret: values name Secrets and never hold their content, so the
// chart renders no Secret, with every part that reads one turned on (the
// credentials stay in the Secrets the user or cert-manager creates).
func TestChartRendersNoSecret(t *testing.T) {
	on := map[string]any{"enabled": true}
	for _, doc := range manifest.HelmTemplate(t, "otelcol-relay", "otelcol-relay", map[string]any{
		"certManager": on, "fluentBit": on, "federation": on,
		"defaultBackend": map[string]any{"mtls": on}, "backends": map[string]any{"list": exampleBackends},
	}) {
		if strings.Contains(doc, "\nkind: Secret\n") {
			t.Errorf("the chart renders a Secret:\n%s", doc)
		}
	}
}

// TestChartValuesAreTheSchemasDefaults: every default values.schema.json states
// (and so the generated values table shows) is the value values.yaml holds, and
// every leaf of values.yaml is in the schema with a default: the two cannot drift.
func TestChartValuesAreTheSchemasDefaults(t *testing.T) {
	var schema map[string]any
	readYAML(t, filepath.Join(manifest.Chart(), "values.schema.json"), &schema)
	var values map[string]any
	readYAML(t, filepath.Join(manifest.Chart(), "values.yaml"), &values)
	defaults := map[string]any{}
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		if d, ok := s["default"]; ok {
			defaults[path] = d
		}
		props, _ := s["properties"].(map[string]any)
		for k, p := range props {
			walk(strings.TrimPrefix(path+"."+k, "."), p.(map[string]any))
		}
	}
	walk("", schema)
	leaves := map[string]any{}
	var collect func(path string, v any)
	collect = func(path string, v any) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 && !isFreeForm(defaults, path) {
			for k, e := range m {
				collect(strings.TrimPrefix(path+"."+k, "."), e)
			}
			return
		}
		leaves[path] = v
	}
	collect("", values)
	for path, v := range leaves {
		d, ok := defaults[path]
		if !ok {
			t.Errorf("values.yaml %s: no default in values.schema.json", path)
			continue
		}
		if fmt.Sprint(d) != fmt.Sprint(v) {
			t.Errorf("%s: values.yaml has %v, values.schema.json's default is %v", path, v, d)
		}
	}
	for path := range defaults {
		if _, ok := leaves[path]; !ok {
			t.Errorf("values.schema.json %s: a default, but no such key in values.yaml", path)
		}
	}
}

// isFreeForm is whether the value at path is a map the user fills (labels, env)
// rather than a group of keys: the schema gives its default whole.
func isFreeForm(defaults map[string]any, path string) bool {
	_, ok := defaults[path]
	return ok
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestChartFollowsTheRelease: Chart.yaml's version is VERSION and its appVersion the
// image tag components/image runs, so that `helm install` from a checkout runs the
// same image as `kubectl apply -k` of it (make chart sets both again when it
// packages a release).
func TestChartFollowsTheRelease(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(manifest.Dir(".."), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(raw))
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	readYAML(t, filepath.Join(manifest.Chart(), "Chart.yaml"), &chart)
	var image struct {
		Images []struct {
			NewTag string `json:"newTag"`
		} `json:"images"`
	}
	readYAML(t, manifest.Dir("components", "image", "kustomization.yaml"), &image)
	if chart.Version != version {
		t.Errorf("Chart.yaml version %q, VERSION %q", chart.Version, version)
	}
	if len(image.Images) != 1 || chart.AppVersion != image.Images[0].NewTag || chart.AppVersion != "v"+version {
		t.Errorf("Chart.yaml appVersion %q, components/image's tag %+v, VERSION %q", chart.AppVersion, image.Images, version)
	}
}
