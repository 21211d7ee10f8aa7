// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// podCommand and the kustomization writers are what the deploy/ tests share beyond
// internal/manifest.

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// podCommand turns a pod spec's container into arguments and environment that run
// here: config files come out of the mounted ConfigMap into a temp dir, envFrom
// ConfigMaps are read from the overlay, the pod's name (metadata.name) is pod
// and the StatefulSet pod index label is podIndex.
func podCommand(t *testing.T, r manifest.Rendered, spec corev1.PodSpec, pod, podIndex string) ([]string, []string) {
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
		cm, found := r.ConfigMaps[cmName]
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
	// What the kubelet expands $(NAME) in an env value with: what came before it.
	defined := map[string]string{}
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
		cm, found := r.ConfigMaps[from.ConfigMapRef.Name]
		if !found {
			t.Fatalf("envFrom ConfigMap %s is not in the overlay", from.ConfigMapRef.Name)
		}
		for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
			env = append(env, from.Prefix+k+"="+cm.Data[k])
			defined[from.Prefix+k] = cm.Data[k]
		}
	}
	for _, e := range c.Env {
		v := manifest.Expand(e.Value, defined)
		if e.ValueFrom != nil {
			switch {
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.labels['apps.kubernetes.io/pod-index']":
				v = podIndex
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
				v = "otelcol-relay"
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
				v = pod
			case e.ValueFrom.FieldRef != nil:
				v = "127.0.0.1"
				if strings.HasSuffix(e.ValueFrom.FieldRef.FieldPath, "Name") {
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
		defined[e.Name] = v
	}
	return args, env
}

// writeKustomization writes dir/kustomization.yaml with the fields of k.
func writeKustomization(t *testing.T, dir string, k map[string]any) {
	t.Helper()
	k["apiVersion"], k["kind"] = "kustomize.config.k8s.io/v1beta1", "Kustomization"
	out, err := yaml.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), string(out))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// relTo is path relative to dir, as a kustomization in dir names it.
func relTo(t *testing.T, dir, path string) string {
	t.Helper()
	r, err := filepath.Rel(dir, path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
