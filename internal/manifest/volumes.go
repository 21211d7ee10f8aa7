// SPDX-License-Identifier: Apache-2.0

package manifest

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// MountedVolume is the volume mounted at the longest mount path that holds file,
// and file's path inside it.
func MountedVolume(t tb.T, spec corev1.PodSpec, c corev1.Container, file string) (corev1.Volume, string) {
	t.Helper()
	var best corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if (file == m.MountPath || strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")) && len(m.MountPath) > len(best.MountPath) {
			best = m
		}
	}
	if best.Name == "" {
		t.Fatalf("%s is on no volume of container %s (mounts %v)", file, c.Name, c.VolumeMounts)
	}
	if best.SubPath != "" {
		t.Errorf("%s is mounted with subPath %q: the kubelet's updates never reach it", best.MountPath, best.SubPath)
	}
	for _, v := range spec.Volumes {
		if v.Name == best.Name {
			return v, strings.TrimPrefix(strings.TrimPrefix(file, best.MountPath), "/")
		}
	}
	t.Fatalf("mount %s names no volume", best.Name)
	return corev1.Volume{}, ""
}

// ProjectedFrom names the object (kind, name) a file of a volume comes from.
func ProjectedFrom(v corev1.Volume, file string) [2]string {
	switch {
	case v.Secret != nil:
		return [2]string{"secret", v.Secret.SecretName}
	case v.ConfigMap != nil:
		return [2]string{"configMap", v.ConfigMap.Name}
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			if s.Secret != nil && itemsHold(s.Secret.Items, file) {
				return [2]string{"secret", s.Secret.Name}
			}
			if s.ConfigMap != nil && itemsHold(s.ConfigMap.Items, file) {
				return [2]string{"configMap", s.ConfigMap.Name}
			}
		}
	}
	return [2]string{"volume", v.Name}
}

func itemsHold(items []corev1.KeyToPath, file string) bool {
	for _, it := range items {
		if it.Path == file {
			return true
		}
	}
	return false
}
