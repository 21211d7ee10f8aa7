// SPDX-License-Identifier: Apache-2.0

package e2e_test

// Helpers the deploy/ tests share: an overlay as kustomize renders it, a pod
// spec turned into the command and environment that run it here, and small
// string and map helpers.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"go.opentelemetry.io/collector/pdata/pmetric"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

var overlays = []string{"aks", "tigera", "example-backend"}

func deployDir(parts ...string) string {
	return filepath.Join(append([]string{e2e.RepoRoot(), "deploy"}, parts...)...)
}

// rendered is one overlay as kustomize builds it.
type rendered struct {
	configMaps   map[string]corev1.ConfigMap
	statefulSets []appsv1.StatefulSet
	daemonSets   []appsv1.DaemonSet
	hpas         []autoscalingv2.HorizontalPodAutoscaler
	pdbs         []policyv1.PodDisruptionBudget
	services     []corev1.Service
}

func kustomize(t *testing.T, dir string) rendered {
	t.Helper()
	r := rendered{configMaps: map[string]corev1.ConfigMap{}}
	for _, doc := range kustomizeDocs(t, dir) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		switch meta.Kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			mustUnmarshal(t, doc, &cm)
			r.configMaps[cm.Name] = cm
		case "StatefulSet":
			appendDoc(t, doc, &r.statefulSets)
		case "DaemonSet":
			appendDoc(t, doc, &r.daemonSets)
		case "HorizontalPodAutoscaler":
			appendDoc(t, doc, &r.hpas)
		case "PodDisruptionBudget":
			appendDoc(t, doc, &r.pdbs)
		case "Service":
			appendDoc(t, doc, &r.services)
		}
	}
	return r
}

// kustomizeDocs is the YAML documents kustomize renders from dir.
func kustomizeDocs(t *testing.T, dir string) []string {
	t.Helper()
	out, err := execOutput("kubectl", "kustomize", dir)
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, out)
	}
	return strings.Split(out, "\n---\n")
}

// appendDoc unmarshals doc strictly as a T and appends it to list.
func appendDoc[T any](t *testing.T, doc string, list *[]T) {
	t.Helper()
	var v T
	mustUnmarshal(t, doc, &v)
	*list = append(*list, v)
}

func mustUnmarshal(t *testing.T, doc string, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
}

// federationOverlay is deploy/base with deploy/components/federation and then the
// given components, the way a user's overlay that federates includes them.
func federationOverlay(t *testing.T, components ...string) string {
	t.Helper()
	with := []string{deployDir("components", "federation")}
	for _, c := range components {
		with = append(with, deployDir("components", c))
	}
	return overlayOf(t, []string{deployDir("base")}, with...)
}

// shardedOverlay is federationOverlay with deploy/components/federation-shards.
func shardedOverlay(t *testing.T) string {
	t.Helper()
	return federationOverlay(t, "federation-shards")
}

// federationOverlays are the overlays that run federation: tigera's, and base with
// the federation component as shipped, sharded, over plain http, and with the
// default backend's mutual TLS.
func federationOverlays(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		"tigera":          deployDir("overlays", "tigera"),
		"federation":      federationOverlay(t),
		"sharded":         shardedOverlay(t),
		"plain-http":      federationOverlay(t, "federation-plain-http"),
		"federation-mtls": federationOverlay(t, "backend-default-mtls"),
	}
}

// overlayOf writes a kustomization of resources and components, the way a user's
// overlay includes them, and returns its folder.
func overlayOf(t *testing.T, resources []string, components ...string) string {
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

// podCommand turns a pod spec's container into arguments and environment that run
// here: config files come out of the mounted ConfigMap into a temp dir, envFrom
// ConfigMaps are read from the overlay, and the StatefulSet pod index label is
// podIndex.
func podCommand(t *testing.T, r rendered, spec corev1.PodSpec, podIndex string) ([]string, []string) {
	t.Helper()
	c := spec.Containers[0]
	mounts := map[string]string{} // mount path -> ConfigMap name
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				mounts[m.MountPath] = v.ConfigMap.Name
			}
		}
	}
	dir := t.TempDir()
	var args []string
	for _, a := range c.Args {
		p, ok := strings.CutPrefix(a, "--config=")
		if !ok {
			args = append(args, a)
			continue
		}
		cmName, found := mounts[filepath.Dir(p)]
		if !found {
			t.Fatalf("%s is not in a mounted ConfigMap", p)
		}
		cm, found := r.configMaps[cmName]
		if !found {
			t.Fatalf("ConfigMap %s is not in the overlay", cmName)
		}
		data, found := cm.Data[filepath.Base(p)]
		if !found {
			t.Fatalf("ConfigMap %s has no key %s", cmName, filepath.Base(p))
		}
		local := filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(local, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", local)
	}
	var env []string
	// envFrom first: an env entry of the same name wins, as in the kubelet.
	for _, from := range c.EnvFrom {
		if sr := from.SecretRef; sr != nil && sr.Optional != nil && *sr.Optional {
			// A Secret the user creates (header values); the kubelet starts the
			// pod without it, and so does this test: nothing secret is in deploy/.
			continue
		}
		if from.ConfigMapRef == nil {
			t.Fatalf("envFrom %+v: only ConfigMaps and optional Secrets are expected", from)
		}
		cm, found := r.configMaps[from.ConfigMapRef.Name]
		if !found {
			t.Fatalf("envFrom ConfigMap %s is not in the overlay", from.ConfigMapRef.Name)
		}
		for _, k := range keys(cm.Data) {
			env = append(env, from.Prefix+k+"="+cm.Data[k])
		}
	}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			switch {
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.labels['apps.kubernetes.io/pod-index']":
				v = podIndex
			case e.ValueFrom.FieldRef != nil:
				v = "127.0.0.1"
				if strings.HasSuffix(e.ValueFrom.FieldRef.FieldPath, "Name") || e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
					v = "node-a"
				}
			case strings.HasSuffix(e.Name, "_ENDPOINT"):
				v = "https://backend.example.com:4317"
			case e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Optional != nil && *e.ValueFrom.ConfigMapKeyRef.Optional:
				continue // absent, as when the optional ConfigMap does not exist
			default:
				v = "placeholder-from-" + e.Name
			}
		}
		env = append(env, e.Name+"="+v)
	}
	return args, env
}

func resourceVersions(t *testing.T, k *e2e.Kube, dir string) []string {
	t.Helper()
	out := k.MustKubectl(t, "get", "-k", dir, "-o", `jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}`)
	lines := strings.Fields(out)
	sort.Strings(lines)
	return lines
}

func installServiceMonitorCRD(t *testing.T, k *e2e.Kube) {
	t.Helper()
	// The prometheus-operator CRD, reduced to what the API server needs to store
	// a ServiceMonitor.
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`
	p := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(p, []byte(crd), 0o600); err != nil {
		t.Fatal(err)
	}
	k.MustKubectl(t, "apply", "--server-side", "-f", p)
	k.MustKubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/servicemonitors.monitoring.coreos.com")
}

func execOutput(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.String(), err
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func tail(s string) string {
	if len(s) > 6000 {
		return "..." + s[len(s)-6000:]
	}
	return s
}

func grepLines(s, substr string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func forEachMetric(rm pmetric.ResourceMetrics, f func(pmetric.Metric)) {
	for j := 0; j < rm.ScopeMetrics().Len(); j++ {
		ms := rm.ScopeMetrics().At(j).Metrics()
		for k := 0; k < ms.Len(); k++ {
			f(ms.At(k))
		}
	}
}
