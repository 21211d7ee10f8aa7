// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// TestKubePriorityClassComponent: deploy/components/priority-class gives the relay,
// federation and the agents the otelcol-relay PriorityClass, and the API server's
// Priority admission resolves it on their pods; without the component a pod gets
// the cluster's default, 0 (what deploy/README.md says).
func TestKubePriorityClassComponent(t *testing.T) {
	k := e2e.StartKube(t)
	ctx := context.Background()
	const ns = "otelcol-relay"

	admitted := func(spec corev1.PodSpec) int32 {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "priority-", Namespace: ns}, Spec: spec}
		got, err := k.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("dry-run pod from the agent's template: %v", err)
		}
		if got.Spec.Priority == nil {
			t.Fatal("the API server set no priority on the pod")
		}
		return *got.Spec.Priority
	}

	base := manifest.OverlayOf(t, []string{manifest.Dir("base"), manifest.Dir("agent")})
	k.MustKubectl(t, "apply", "--server-side", "-k", base)
	ds, err := k.Client.AppsV1().DaemonSets(ns).Get(ctx, "otelcol-relay-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := admitted(ds.Spec.Template.Spec); p != 0 {
		t.Errorf("without the component the agent's pod has priority %d, want the default 0", p)
	}

	with := manifest.OverlayOf(t, []string{manifest.Dir("base"), manifest.Dir("agent")}, manifest.Dir("components", "federation"), manifest.Dir("components", "priority-class"))
	k.MustKubectl(t, "apply", "--server-side", "-k", with)
	for _, name := range []string{"otelcol-relay", "otelcol-relay-federation"} {
		sts, serr := k.Client.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if serr != nil {
			t.Fatal(serr)
		}
		if got := sts.Spec.Template.Spec.PriorityClassName; got != "otelcol-relay" {
			t.Errorf("StatefulSet %s: priorityClassName %q, want otelcol-relay", name, got)
		}
	}
	ds, err = k.Client.AppsV1().DaemonSets(ns).Get(ctx, "otelcol-relay-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Spec.Template.Spec.PriorityClassName; got != "otelcol-relay" {
		t.Errorf("DaemonSet otelcol-relay-agent: priorityClassName %q, want otelcol-relay", got)
	}
	if p := admitted(ds.Spec.Template.Spec); p != 1000000 {
		t.Errorf("with the component the agent's pod has priority %d, want the otelcol-relay class's 1000000", p)
	}
}
