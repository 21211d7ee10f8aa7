// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// tigeraPrometheusService is the Service the Tigera operator renders in front of
// its Prometheus (pkg/render/monitor, prometheusServiceService): port "web" 9090,
// forwarded to the authn-proxy on pod port 9095, selecting the Prometheus pods.
const tigeraPrometheusService = `apiVersion: v1
kind: Namespace
metadata: {name: tigera-prometheus}
---
apiVersion: v1
kind: Service
metadata:
  name: prometheus-http-api
  namespace: tigera-prometheus
  labels: {k8s-app: tigera-prometheus}
spec:
  type: ClusterIP
  selector: {prometheus: calico-node-prometheus}
  ports:
    - {name: web, port: 9090, targetPort: 9095, protocol: TCP}
`

// TestKubeTigeraOverlay applies deploy/overlays/tigera to a real API server, beside
// the objects of Tigera's that it relies on, and checks where a mistake would be
// silent in a Calico cluster: NetworkPolicy ports are pod ports, so each rule's
// ports must be the targetPorts of the Services it is meant for; the ServiceAccount
// may `get services/proxy` on calico-node-prometheus:9090 and nothing like it; no
// object lands on a name the operator owns.
func TestKubeTigeraOverlay(t *testing.T) {
	k := e2e.StartKube(t)
	fixture := filepath.Join(t.TempDir(), "tigera-prometheus.yaml")
	if err := os.WriteFile(fixture, []byte(tigeraPrometheusService), 0o600); err != nil {
		t.Fatal(err)
	}
	k.MustKubectl(t, "apply", "--server-side", "-f", fixture)
	dir := manifest.Dir("overlays", "tigera")
	k.MustKubectl(t, "apply", "--server-side", "-k", dir)

	ctx := context.Background()
	sts, err := k.Client.AppsV1().StatefulSets("otelcol-relay").Get(ctx, "otelcol-relay", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	np, err := k.Client.NetworkingV1().NetworkPolicies("otelcol-relay").Get(ctx, "otelcol-relay", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Ingress: from the operator's collector, on the pod ports behind the relay's
	// OTLP Service ports.
	if len(np.Spec.Ingress) != 1 {
		t.Fatalf("want one ingress rule (the operator's collector), got %d", len(np.Spec.Ingress))
	}
	in := np.Spec.Ingress[0]
	if len(in.From) != 1 || fmt.Sprint(in.From[0].NamespaceSelector.MatchLabels) != "map[kubernetes.io/metadata.name:calico-system]" ||
		fmt.Sprint(in.From[0].PodSelector.MatchLabels) != "map[k8s-app:otel-collector]" {
		t.Errorf("ingress from %+v, want calico-system pods labelled k8s-app: otel-collector", in.From)
	}
	svc, err := k.Client.CoreV1().Services("otelcol-relay").Get(ctx, "otelcol-relay", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := policyPorts(t, in.Ports), targetPorts(t, svc, sts, "otlp-http", "otlp-grpc"); !slices.Equal(got, want) {
		t.Errorf("ingress ports %v, but Service otelcol-relay's OTLP ports forward to pod ports %v", got, want)
	}

	// Egress to every Service a rule selects pods of: its ports must be the
	// Service's targetPorts. The federation rule must select the authn-proxy's.
	// Federation runs in its own pod, under its own policy.
	nps, err := k.Client.NetworkingV1().NetworkPolicies("otelcol-relay").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	matched := 0
	for _, p := range nps.Items {
		for i, rule := range p.Spec.Egress {
			for _, peer := range rule.To {
				if peer.PodSelector == nil || peer.NamespaceSelector == nil {
					continue
				}
				for _, s := range servicesSelecting(t, k, peer) {
					matched++
					if got, want := policyPorts(t, rule.Ports), targetPorts(t, &s, nil); !slices.Equal(got, want) {
						t.Errorf("%s egress[%d] opens ports %v towards Service %s/%s, whose ports forward to pod ports %v", p.Name, i, got, s.Namespace, s.Name, want)
					}
				}
			}
		}
	}
	if matched == 0 {
		t.Errorf("no egress rule selects the pods of tigera-prometheus/prometheus-http-api: federation would be dropped")
	}

	// RBAC: the proxy's SubjectAccessReview passes for that name only.
	sa := "--as=system:serviceaccount:otelcol-relay:otelcol-relay-federation"
	for name, want := range map[string]string{"calico-node-prometheus:9090": "yes", "prometheus-http-api": "no", "https:calico-api:8080": "no"} {
		out, _ := k.Kubectl(t, "auth", "can-i", "get", "services/"+name, "--subresource=proxy", "-n", "tigera-prometheus", sa)
		if got := lastLine(out); got != want {
			t.Errorf("can get services/proxy %s: %s, want %s", name, got, want)
		}
	}
	for _, verb := range []string{"create", "update", "delete"} {
		if out, _ := k.Kubectl(t, "auth", "can-i", verb, "services/calico-node-prometheus:9090", "--subresource=proxy", "-n", "tigera-prometheus", sa); lastLine(out) != "no" {
			t.Errorf("can %s services/proxy: %s", verb, out)
		}
	}

	// Names: nothing in calico-system, nothing called otel-collector*.
	for _, line := range strings.Fields(k.MustKubectl(t, "get", "-k", dir, "-o", `jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}`)) {
		ns, name, _ := strings.Cut(line, "/")
		if ns == "calico-system" || strings.HasPrefix(name, "otel-collector") || strings.HasPrefix(name, "calico-") || strings.HasPrefix(name, "tigera-") {
			t.Errorf("object %s uses a namespace or name the Tigera operator owns", line)
		}
	}
}

// policyPorts returns a rule's ports as numbers, sorted; a named port would need
// the pod to resolve it and is refused here.
func policyPorts(t *testing.T, ports []networkingv1.NetworkPolicyPort) []int32 {
	t.Helper()
	var out []int32
	for _, p := range ports {
		if p.Port == nil || p.Port.Type != intstr.Int {
			t.Fatalf("policy port %v is not a number", p.Port)
		}
		out = append(out, p.Port.IntVal)
	}
	slices.Sort(out)
	return out
}

// targetPorts resolves the targetPorts of the named Service ports (all when none
// are named) to pod port numbers, through the pod template's named container ports.
func targetPorts(t *testing.T, svc *corev1.Service, sts *appsv1.StatefulSet, names ...string) []int32 {
	t.Helper()
	var out []int32
	for _, p := range svc.Spec.Ports {
		if len(names) > 0 && !slices.Contains(names, p.Name) {
			continue
		}
		if p.TargetPort.Type == intstr.Int {
			out = append(out, p.TargetPort.IntVal)
			continue
		}
		found := false
		for _, c := range sts.Spec.Template.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == p.TargetPort.StrVal {
					out, found = append(out, cp.ContainerPort), true
				}
			}
		}
		if !found {
			t.Fatalf("Service %s port %s targets %q, which no container port is named", svc.Name, p.Name, p.TargetPort.StrVal)
		}
	}
	slices.Sort(out)
	return out
}

// servicesSelecting returns the Services, in the namespaces the peer selects,
// whose pods are the pods the peer selects (the Service selector is the peer's
// pod selector).
func servicesSelecting(t *testing.T, k *e2e.Kube, peer networkingv1.NetworkPolicyPeer) []corev1.Service {
	t.Helper()
	ctx := context.Background()
	nsSel, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	nss, err := k.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: nsSel.String()})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Service
	for _, ns := range nss.Items {
		svcs, err := k.Client.CoreV1().Services(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range svcs.Items {
			if len(s.Spec.Selector) > 0 && labels.Equals(s.Spec.Selector, peer.PodSelector.MatchLabels) {
				out = append(out, s)
			}
		}
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
