// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

// The overlays applied to a real kube-apiserver (from `hack/kube-peers.sh`, in
// bin/): they apply, apply again as a no-op, and store what a cluster would run.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// TestKubeDeployApply applies every overlay (and base with federation over plain
// http) to a real API server twice: the first apply creates everything, the second
// changes nothing (no resourceVersion moves, and `kubectl diff --server-side` finds
// no difference).
func TestKubeDeployApply(t *testing.T) {
	k := e2e.StartKube(t)
	installServiceMonitorCRD(t, k)

	// Every overlay, and federation over plain http before tigera's (the objects
	// share names: the last apply is what the checks below read).
	dirs := map[string]string{"plain-http federation": manifest.FederationOverlay(t, "federation-plain-http")}
	order := []string{"aks", "plain-http federation", "tigera", "example-backend"}
	for _, o := range manifest.Overlays() {
		dirs[o] = manifest.Dir("overlays", o)
	}
	for _, o := range order {
		dir := dirs[o]
		out := k.MustKubectl(t, "apply", "--server-side", "--field-manager=otelcol-relay-e2e", "-k", dir)
		t.Logf("%s: first apply:\n%s", o, out)
		before := resourceVersions(t, k, dir)
		if len(before) < 8 {
			t.Fatalf("%s: only %d objects after apply: %v", o, len(before), before)
		}
		k.MustKubectl(t, "apply", "--server-side", "--field-manager=otelcol-relay-e2e", "-k", dir)
		after := resourceVersions(t, k, dir)
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("%s: second apply changed objects:\nbefore %v\nafter  %v", o, before, after)
		}
		if out, err := k.Kubectl(t, "diff", "--server-side", "--field-manager=otelcol-relay-e2e", "-k", dir); err != nil {
			t.Errorf("%s: kubectl diff after apply reports a difference (%v):\n%s", o, err, out)
		}
	}

	// What the apply produced, checked where a mistake is silent in a cluster.
	ctx := context.Background()
	sts, err := k.Client.AppsV1().StatefulSets("otelcol-relay").Get(ctx, "otelcol-relay", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkGatewayPod(t, sts)
	fed, err := k.Client.AppsV1().StatefulSets("otelcol-relay").Get(ctx, "otelcol-relay-federation", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := fed.Spec.Replicas; r == nil || *r != 1 {
		t.Errorf("federation replicas = %v, want exactly 1", r)
	}
	// The HPA and PDBs as the API server stored them (defaults applied), for the
	// relay of each namespace.
	for ns, relay := range map[string]string{"otelcol-relay": "otelcol-relay"} {
		hpa, lerr := k.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "otelcol-relay", metav1.GetOptions{})
		if lerr != nil {
			t.Fatalf("%s: %v", ns, lerr)
		}
		if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "StatefulSet" || ref.Name != relay {
			t.Errorf("%s: HPA scales %s/%s, want StatefulSet/%s", ns, ref.Kind, ref.Name, relay)
		}
		if _, gerr := k.Client.AppsV1().StatefulSets(ns).Get(ctx, hpa.Spec.ScaleTargetRef.Name, metav1.GetOptions{}); gerr != nil {
			t.Errorf("%s: the HPA's target: %v", ns, gerr)
		}
		if m := hpa.Spec.MinReplicas; m == nil || *m != 2 || hpa.Spec.MaxReplicas < 2 {
			t.Errorf("%s: HPA min %v max %d, want min 2", ns, m, hpa.Spec.MaxReplicas)
		}
		pdbs, lerr := k.Client.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
		if lerr != nil {
			t.Fatal(lerr)
		}
		if len(pdbs.Items) != 2 {
			t.Errorf("%s: %d PodDisruptionBudgets, want the relay's and federation's", ns, len(pdbs.Items))
		}
	}
	checkFederationToken(t, "tigera federation", fed)
	agentSvc, err := k.Client.CoreV1().Services("otelcol-relay").Get(context.Background(), "otelcol-relay-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := agentSvc.Spec.InternalTrafficPolicy; p == nil || *p != corev1.ServiceInternalTrafficPolicyLocal {
		t.Errorf("agent Service internalTrafficPolicy = %v, want Local", p)
	}
}

func checkGatewayPod(t *testing.T, sts *appsv1.StatefulSet) {
	t.Helper()
	// Without a controller-manager nothing scales it: the default of a
	// StatefulSet whose manifest leaves replicas to the HPA.
	if r := sts.Spec.Replicas; r == nil || *r != 1 {
		t.Errorf("relay replicas = %v, want the default 1 (the manifest sets none)", r)
	}
	spec := sts.Spec.Template.Spec
	if fs := spec.SecurityContext.FSGroup; fs == nil || *fs != 10001 {
		t.Errorf("fsGroup = %v, want 10001 (the queue volume must be writable by uid 10001)", fs)
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || *sc.RunAsUser != 10001 || *sc.RunAsGroup != 10001 ||
		!*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container securityContext is not the hardened one: %+v", sc)
	}
	for _, m := range c.VolumeMounts {
		if m.SubPath != "" || m.SubPathExpr != "" {
			t.Errorf("volume mount %s uses subPath: rotated files would never reach the collector", m.Name)
		}
	}
	if got := c.Resources.Requests.Memory().String() + "/" + c.Resources.Limits.Memory().String(); got != "384Mi/512Mi" {
		t.Errorf("memory request/limit = %s, want 384Mi/512Mi", got)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("want one volumeClaimTemplate for the queue, got %d", len(sts.Spec.VolumeClaimTemplates))
	}
}

// checkFederationToken: the token federation sends to its target is a projected
// ServiceAccount token of its own with a short expiry, not the pod's API token
// (valid an hour, which the API server may extend to a year).
func checkFederationToken(t *testing.T, name string, sts *appsv1.StatefulSet) {
	t.Helper()
	spec := sts.Spec.Template.Spec
	c := spec.Containers[0]
	file := ""
	for _, e := range c.Env {
		if e.Name == "RELAY_FEDERATION_TOKEN_FILE" {
			file = e.Value
		}
	}
	if file == "" {
		t.Errorf("%s: RELAY_FEDERATION_TOKEN_FILE is not set: federation sends the pod's API token", name)
		return
	}
	for _, m := range c.VolumeMounts {
		if filepath.Dir(file) != m.MountPath {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.Projected == nil {
				continue
			}
			for _, src := range v.Projected.Sources {
				if sat := src.ServiceAccountToken; sat != nil && sat.Path == filepath.Base(file) {
					if sat.ExpirationSeconds == nil || *sat.ExpirationSeconds > 900 {
						t.Errorf("%s: federation token expires after %v s, want at most 900", name, sat.ExpirationSeconds)
					}
					return
				}
			}
		}
	}
	t.Errorf("%s: RELAY_FEDERATION_TOKEN_FILE %s is not a projected serviceAccountToken", name, file)
}

// TestKubeCertManagerComponent applies what deploy/README.md's "Certificates from
// cert-manager" applies server-side to a real API server with the real CRDs
// installed: deploy/cert-manager and its trust-manager Bundle (the cluster's part),
// deploy/overlays/platform (base + agent + the cert-manager, servicemonitor and
// alerts components) as shipped and moved by a user's kustomization to team-obs
// under a-, and overlays/platform-fluent-bit (with fluent-bit's monitor). Each twice: the second apply changes
// nothing.
func TestKubeCertManagerComponent(t *testing.T) {
	k := e2e.StartKube(t)
	e2e.InstallPlatformCRDs(t, func(args ...string) string { return k.MustKubectl(t, args...) })
	// cert-manager's namespace exists before this is installed.
	k.MustKubectl(t, "create", "namespace", "cert-manager")

	platform := manifest.Dir("overlays", "platform")
	for _, step := range []struct {
		dir  string
		want []string
	}{
		{manifest.Dir("cert-manager"), []string{
			"certificate.cert-manager.io/otelcol-relay-ca serverside-applied",
			"clusterissuer.cert-manager.io/otelcol-relay-ca serverside-applied",
			"clusterissuer.cert-manager.io/otelcol-relay-selfsigned serverside-applied",
		}},
		{manifest.Dir("cert-manager", "trust-manager"), []string{"bundle.trust.cert-manager.io/otelcol-relay-ca serverside-applied"}},
		{platform, []string{
			"certificate.cert-manager.io/otelcol-relay-receiver-tls serverside-applied",
			"certificate.cert-manager.io/otelcol-relay-agent-tls serverside-applied",
			"prometheusrule.monitoring.coreos.com/otelcol-relay serverside-applied",
			"servicemonitor.monitoring.coreos.com/otelcol-relay serverside-applied",
			"podmonitor.monitoring.coreos.com/otelcol-relay-federation serverside-applied",
			"podmonitor.monitoring.coreos.com/otelcol-relay-agent serverside-applied",
		}},
		{manifest.MovedTo(t, platform, "team-obs", "a-"), []string{
			"certificate.cert-manager.io/a-otelcol-relay-receiver-tls serverside-applied",
			"certificate.cert-manager.io/a-otelcol-relay-agent-tls serverside-applied",
		}},
		{manifest.Dir("overlays", "platform-fluent-bit"), []string{
			"certificate.cert-manager.io/otelcol-relay-fluent-bit-tls serverside-applied",
			"podmonitor.monitoring.coreos.com/fluent-bit serverside-applied",
			"networkpolicy.networking.k8s.io/fluent-bit serverside-applied",
		}},
	} {
		out := k.MustKubectl(t, "apply", "--server-side", "--field-manager=otelcol-relay-e2e", "-k", step.dir)
		t.Logf("first apply of %s:\n%s", step.dir, out)
		for _, want := range step.want {
			if !strings.Contains(out, want) {
				t.Errorf("%s: first apply did not report %q", step.dir, want)
			}
		}
		before := resourceVersions(t, k, step.dir)
		k.MustKubectl(t, "apply", "--server-side", "--field-manager=otelcol-relay-e2e", "-k", step.dir)
		if after := resourceVersions(t, k, step.dir); strings.Join(before, "\n") != strings.Join(after, "\n") {
			t.Errorf("%s: second apply changed objects:\nbefore %v\nafter  %v", step.dir, before, after)
		}
	}
	// The moved install's serving certificate names its renamed Service, and its
	// namespace carries the Bundle's label.
	if out, err := k.Kubectl(t, "get", "certificate", "-n", "team-obs", "a-otelcol-relay-receiver-tls", "-o", "jsonpath={.spec.dnsNames}"); err != nil || out != `["a-otelcol-relay"]` {
		t.Errorf("moved install: serving Certificate dnsNames = %s (%v), want [\"a-otelcol-relay\"]", out, err)
	}
	if out, err := k.Kubectl(t, "get", "namespace", "team-obs", "-o", `jsonpath={.metadata.labels.otelcol-relay\.io/ca-bundle}`); err != nil || out != "true" {
		t.Errorf("moved install: namespace team-obs label otelcol-relay.io/ca-bundle = %q (%v), want true", out, err)
	}
	// The CRDs' schemas are strict: a field they do not know is refused, not kept.
	if out, err := k.Kubectl(t, "get", "certificate", "-n", "cert-manager", "otelcol-relay-ca", "-o", "jsonpath={.spec.privateKey.rotationPolicy}"); err != nil || out != "Never" {
		t.Errorf("CA Certificate privateKey.rotationPolicy = %q (%v), want Never as applied", out, err)
	}
}
