// SPDX-License-Identifier: Apache-2.0

// Package podrefs lists the Secrets and ConfigMaps a pod spec needs before its
// containers can start: what its volumes (also projected ones), envFrom and env
// valueFrom name, with the keys they read. Optional references are left out: the
// kubelet starts the pod without them.
package podrefs

import (
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Kind is Secret or ConfigMap.
type Kind string

const (
	Secret    Kind = "Secret"
	ConfigMap Kind = "ConfigMap"
)

// Ref is one object a pod needs, and the keys it reads from it. Whole is true when
// the pod reads every key (envFrom, or a volume without items); Keys then holds
// the keys the containers name by path under the mount.
type Ref struct {
	Kind      Kind
	Namespace string
	Name      string
	Keys      []string
	Whole     bool
}

// Of returns the references of spec, a pod in namespace, merged per object and
// sorted by kind and name.
func Of(namespace string, spec corev1.PodSpec) []Ref {
	refs := map[[2]string]*Ref{}
	add := func(kind Kind, name string, optional *bool, whole bool, keys ...string) {
		if optional != nil && *optional {
			return
		}
		id := [2]string{string(kind), name}
		r, ok := refs[id]
		if !ok {
			r = &Ref{Kind: kind, Namespace: namespace, Name: name}
			refs[id] = r
		}
		r.Whole = r.Whole || whole
		for _, k := range keys {
			if !contains(r.Keys, k) {
				r.Keys = append(r.Keys, k)
			}
		}
	}
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, v := range spec.Volumes {
		// Keys a whole-volume mount is read by: the files the containers name.
		named := namedFiles(containers, v.Name)
		switch {
		case v.Secret != nil:
			add(Secret, v.Secret.SecretName, v.Secret.Optional, len(v.Secret.Items) == 0, itemKeys(v.Secret.Items, named)...)
		case v.ConfigMap != nil:
			add(ConfigMap, v.ConfigMap.Name, v.ConfigMap.Optional, len(v.ConfigMap.Items) == 0, itemKeys(v.ConfigMap.Items, named)...)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					add(Secret, s.Secret.Name, s.Secret.Optional, len(s.Secret.Items) == 0, itemKeys(s.Secret.Items, named)...)
				}
				if s.ConfigMap != nil {
					add(ConfigMap, s.ConfigMap.Name, s.ConfigMap.Optional, len(s.ConfigMap.Items) == 0, itemKeys(s.ConfigMap.Items, named)...)
				}
			}
		}
	}
	for _, c := range containers {
		for _, f := range c.EnvFrom {
			if f.SecretRef != nil {
				add(Secret, f.SecretRef.Name, f.SecretRef.Optional, true)
			}
			if f.ConfigMapRef != nil {
				add(ConfigMap, f.ConfigMapRef.Name, f.ConfigMapRef.Optional, true)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add(Secret, r.Name, r.Optional, false, r.Key)
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add(ConfigMap, r.Name, r.Optional, false, r.Key)
			}
		}
	}
	out := make([]Ref, 0, len(refs))
	for _, r := range refs {
		sort.Strings(r.Keys)
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// itemKeys is the keys of items, or, for a whole volume, the files named under it.
func itemKeys(items []corev1.KeyToPath, named []string) []string {
	if len(items) == 0 {
		return named
	}
	var out []string
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

// namedFiles is the base names of the files under volume's mounts that the
// containers' env values and args name (e.g. RELAY_OTLP_TLS_CERT_FILE).
func namedFiles(containers []corev1.Container, volume string) []string {
	var out []string
	for _, c := range containers {
		var words []string
		for _, e := range c.Env {
			words = append(words, e.Value)
		}
		words = append(words, c.Args...)
		for _, m := range c.VolumeMounts {
			if m.Name != volume {
				continue
			}
			dir := strings.TrimSuffix(m.MountPath, "/") + "/"
			for _, w := range words {
				if _, file, ok := strings.Cut(w, dir); ok && file != "" && !strings.Contains(file, "/") && !contains(out, path.Base(file)) {
					out = append(out, file)
				}
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
