// SPDX-License-Identifier: Apache-2.0

// Package manifest renders deploy/ the way a user does, with `kubectl kustomize`,
// and gives the tests the rendered objects. It needs kubectl (Debian's package has
// kustomize built in) and nothing else: no API server, no cluster.
package manifest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// Dir is a path under deploy/.
func Dir(parts ...string) string {
	return filepath.Join(append([]string{e2e.RepoRoot(), "deploy"}, parts...)...)
}

// Overlays are the overlays deploy/overlays ships, beside base and agent.
func Overlays() []string { return []string{"aks", "tigera", "example-backend"} }

// Rendered is one overlay as kustomize builds it: the kinds the tests read.
type Rendered struct {
	ConfigMaps   map[string]corev1.ConfigMap
	StatefulSets []appsv1.StatefulSet
	DaemonSets   []appsv1.DaemonSet
	HPAs         []autoscalingv2.HorizontalPodAutoscaler
	PDBs         []policyv1.PodDisruptionBudget
	Services     []corev1.Service
}

// Render builds dir with kustomize and decodes, strictly, the kinds of Rendered.
func Render(t tb.T, dir string) Rendered {
	t.Helper()
	r := Rendered{ConfigMaps: map[string]corev1.ConfigMap{}}
	for _, doc := range Docs(t, dir) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		switch meta.Kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			Unmarshal(t, doc, &cm)
			r.ConfigMaps[cm.Name] = cm
		case "StatefulSet":
			AppendDoc(t, doc, &r.StatefulSets)
		case "DaemonSet":
			AppendDoc(t, doc, &r.DaemonSets)
		case "HorizontalPodAutoscaler":
			AppendDoc(t, doc, &r.HPAs)
		case "PodDisruptionBudget":
			AppendDoc(t, doc, &r.PDBs)
		case "Service":
			AppendDoc(t, doc, &r.Services)
		}
	}
	return r
}

// StatefulSetOf is the StatefulSet whose pods carry app.kubernetes.io/component.
func (r Rendered) StatefulSetOf(t tb.T, component string) appsv1.StatefulSet {
	t.Helper()
	for _, s := range r.StatefulSets {
		if s.Spec.Template.Labels["app.kubernetes.io/component"] == component {
			return s
		}
	}
	t.Fatalf("no StatefulSet of component %s", component)
	return appsv1.StatefulSet{}
}

// Kustomize is the YAML stream `kubectl kustomize dir` prints.
func Kustomize(t tb.T, dir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "kubectl", "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, out.String())
	}
	return out.String()
}

// Docs is the YAML documents kustomize renders from dir.
func Docs(t tb.T, dir string) []string {
	t.Helper()
	return strings.Split(Kustomize(t, dir), "\n---\n")
}

// Unmarshal decodes doc into v, refusing fields v's type does not have.
func Unmarshal(t tb.T, doc string, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
}

// UnmarshalLoose decodes doc into v, passing over fields v's type does not have:
// for the kinds of other projects (cert-manager, trust-manager) read in part.
func UnmarshalLoose(t tb.T, doc string, v any) {
	t.Helper()
	if err := yaml.Unmarshal([]byte(doc), v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
}

// OverlayOf writes a kustomization of resources and components, the way a user's
// overlay includes them, and returns its folder.
func OverlayOf(t tb.T, resources []string, components ...string) string {
	t.Helper()
	dir := t.TempDir()
	rel := func(ps []string) string {
		var out []string
		for _, p := range ps {
			r, err := filepath.Rel(dir, p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return strings.Join(out, ", ")
	}
	k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s]\ncomponents: [%s]\n",
		rel(resources), rel(components))
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// MovedTo writes the kustomization a user moves an install with: root (a folder)
// as its one resource, kustomize's `namespace:` and `namePrefix:` over it, and
// nothing else. It returns its folder.
func MovedTo(t tb.T, root, namespace, prefix string) string {
	t.Helper()
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, root)
	if err != nil {
		t.Fatal(err)
	}
	k, err := yaml.Marshal(map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"namespace":  namespace,
		"namePrefix": prefix,
		"resources":  []string{rel},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), k, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// FederationOverlay is deploy/base with deploy/components/federation and then the
// given components, the way a user's overlay that federates includes them.
func FederationOverlay(t tb.T, components ...string) string {
	t.Helper()
	with := []string{Dir("components", "federation")}
	for _, c := range components {
		with = append(with, Dir("components", c))
	}
	return OverlayOf(t, []string{Dir("base")}, with...)
}

// FederationOverlays are the overlays that run federation: tigera's, and base with
// the federation component as shipped, sharded, over plain http, with the
// default backend's mutual TLS, and with a backends list of its own beside the
// relay's.
func FederationOverlays(t tb.T) map[string]string {
	t.Helper()
	return map[string]string{
		"tigera":              Dir("overlays", "tigera"),
		"federation":          FederationOverlay(t),
		"sharded":             FederationOverlay(t, "federation-shards"),
		"plain-http":          FederationOverlay(t, "federation-plain-http"),
		"federation-mtls":     FederationOverlay(t, "backend-default-mtls"),
		"federation-backends": FederationOverlay(t, "backends", "federation-backends"),
	}
}

// Selects is whether sel takes a pod with podLabels (an invalid selector takes none).
func Selects(sel *metav1.LabelSelector, podLabels map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(podLabels))
}

var shardVar = regexp.MustCompile(`^RELAY_FEDERATION_MATCH_(\d+)$`)

// ShardIndex is N of a federation shard's RELAY_FEDERATION_MATCH_N variable.
func ShardIndex(envName string) (int, bool) {
	m := shardVar.FindStringSubmatch(envName)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// AppendDoc unmarshals doc strictly as a T and appends it to list.
func AppendDoc[T any](t tb.T, doc string, list *[]T) {
	t.Helper()
	var v T
	Unmarshal(t, doc, &v)
	*list = append(*list, v)
}
