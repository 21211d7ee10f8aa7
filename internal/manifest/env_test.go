// SPDX-License-Identifier: Apache-2.0

package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"SVC": "a-otelcol-relay", "NS": "team-obs", "EMPTY": ""}
	for in, want := range map[string]string{
		"$(SVC).$(NS).svc:4317": "a-otelcol-relay.team-obs.svc:4317",
		"$(UNSET).svc":          "$(UNSET).svc",
		"$$(SVC)":               "$(SVC)",
		"cost: 5$":              "cost: 5$",
		"a$b":                   "a$b",
		"$(SVC":                 "$(SVC",
		"x$(EMPTY)y":            "xy",
		"":                      "",
	} {
		assert.Equal(t, want, Expand(in, vars), "Expand(%q)", in)
	}
}

func TestEnv(t *testing.T) {
	c := corev1.Container{Env: []corev1.EnvVar{
		{Name: "LATER", Value: "$(SVC)"}, // defined after: not expanded, as by the kubelet
		{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "SVC", Value: "otelcol-relay"},
		{Name: "ADDR", Value: "$(SVC).$(NS).svc:4317 from $(IP)"},
	}}
	assert.Equal(t, map[string]string{
		"LATER": "$(SVC)",
		"NS":    "team-obs",
		"SVC":   "otelcol-relay",
		"ADDR":  "otelcol-relay.team-obs.svc:4317 from $(IP)",
	}, Env("team-obs", c))
}
