// SPDX-License-Identifier: Apache-2.0

package podrefs

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestOf(t *testing.T) {
	yes := true
	spec := corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "whole", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "serving"}}},
			{Name: "opt", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "optional"}, Optional: &yes}}},
			{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "client"}, Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "a"}, {Key: "tls.key", Path: "b"}}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}}},
		},
		Containers: []corev1.Container{{
			VolumeMounts: []corev1.VolumeMount{{Name: "whole", MountPath: "/tls"}, {Name: "proj", MountPath: "/p"}},
			Env: []corev1.EnvVar{
				{Name: "CERT", Value: "/tls/tls.crt"},
				{Name: "AUTH", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "auth"}, Key: "authorization"}}},
				{Name: "EP", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}, Key: "endpoint"}}},
				{Name: "T", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "target"}, Key: "t", Optional: &yes}}},
			},
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "headers"}, Optional: &yes}}},
			Args:    []string{"--key=/tls/tls.key"},
		}},
	}
	got := fmt.Sprint(Of("ns", spec))
	want := "[{ConfigMap ns ca [ca.crt endpoint] false} {Secret ns auth [authorization] false} {Secret ns client [tls.crt tls.key] false} {Secret ns serving [tls.crt tls.key] true}]"
	if got != want {
		t.Errorf("Of:\n got  %s\n want %s", got, want)
	}
}
