// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

// The upgrade from the single gateway as it was released to the relay of deploy/base,
// on a real API server, without losing its queue.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// TestKubeDeployUpgrade installs the single gateway as it was released (deploy/base
// before the split, rendered into testdata), gives its pod 0 the queue PVC the
// StatefulSet controller would create, then applies today's deploy/base over it
// with the federation component (the old gateway federated) on the same real API
// server. The relay is the same StatefulSet object (updated
// in place: none of its immutable fields moved), its pod 0 claims that same PVC,
// federation claims another one, and from then on the HPA's replica count
// survives every apply.
func TestKubeDeployUpgrade(t *testing.T) {
	k := e2e.StartKube(t)
	ctx := context.Background()
	const ns = "otelcol-relay"
	k.MustKubectl(t, "apply", "--server-side", "-f", filepath.Join(e2e.RepoRoot(), "test", "e2e", "testdata", "single-gateway-base.yaml"))
	sts := k.Client.AppsV1().StatefulSets(ns)
	old, err := sts.Get(ctx, "otelcol-relay", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No controller-manager runs: create pod 0's claim the way the StatefulSet
	// controller does, <template>-<statefulset>-<ordinal>, from the template and
	// labelled with the selector.
	tmpl := old.Spec.VolumeClaimTemplates[0]
	pvcLabels := map[string]string{}
	for k, v := range tmpl.Labels {
		pvcLabels[k] = v
	}
	for k, v := range old.Spec.Selector.MatchLabels {
		pvcLabels[k] = v
	}
	backlog, err := k.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-0", tmpl.Name, old.Name), Labels: pvcLabels},
		Spec:       tmpl.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the single gateway's queue: PVC %s (uid %s)", backlog.Name, backlog.UID)

	today := manifest.FederationOverlay(t)
	out := k.MustKubectl(t, "apply", "--server-side", "-k", today)
	t.Logf("upgrade:\n%s", out)
	relay, err := sts.Get(ctx, "otelcol-relay", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if relay.UID != old.UID || relay.Generation == old.Generation {
		t.Errorf("relay StatefulSet uid %s generation %d, want the gateway's object (uid %s) updated in place (generation > %d)", relay.UID, relay.Generation, old.UID, old.Generation)
	}
	claim := fmt.Sprintf("%s-%s-0", relay.Spec.VolumeClaimTemplates[0].Name, relay.Name)
	if claim != backlog.Name {
		t.Fatalf("relay pod 0 claims %s, the old gateway's queue is %s", claim, backlog.Name)
	}
	got, err := k.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil || got.UID != backlog.UID {
		t.Fatalf("PVC %s after the upgrade: %v (uid %v, want %s)", claim, err, got.UID, backlog.UID)
	}
	if !manifest.Selects(relay.Spec.Selector, got.Labels) {
		t.Errorf("the relay's selector %v does not select the kept PVC's labels %v", relay.Spec.Selector, got.Labels)
	}
	fed, err := sts.Get(ctx, "otelcol-relay-federation", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := fmt.Sprintf("%s-%s-0", fed.Spec.VolumeClaimTemplates[0].Name, fed.Name); c == backlog.Name {
		t.Errorf("federation pod 0 would claim the relay's queue %s", c)
	}
	for _, e := range relay.Spec.Template.Spec.Containers[0].Env {
		if strings.HasPrefix(e.Name, "RELAY_FEDERATION_") {
			t.Errorf("relay pods still get %s after the upgrade", e.Name)
		}
	}
	// The old manifest's replicas: 1 was the applier's; today's manifest has none,
	// so the field falls back to its default instead of staying pinned.
	if r := relay.Spec.Replicas; r == nil || *r != 1 {
		t.Errorf("relay replicas after the upgrade = %v, want the default 1 until the HPA scales", r)
	}

	// The HPA scales through the scale subresource; a later apply must not undo it.
	scale, err := sts.GetScale(ctx, "otelcol-relay", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 3
	if _, serr := sts.UpdateScale(ctx, "otelcol-relay", scale, metav1.UpdateOptions{FieldManager: "horizontal-pod-autoscaler"}); serr != nil {
		t.Fatal(serr)
	}
	k.MustKubectl(t, "apply", "--server-side", "-k", today)
	if relay, err = sts.Get(ctx, "otelcol-relay", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := relay.Spec.Replicas; r == nil || *r != 3 {
		t.Errorf("relay replicas after re-applying the manifests = %v, want the HPA's 3", r)
	}
}
