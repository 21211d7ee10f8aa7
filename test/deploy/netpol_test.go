// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"net"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// peer is a destination (or source) as a NetworkPolicy sees it: an IP, and the
// pod's and its namespace's labels when it is a pod (nil when it is not: a node
// address, a ClusterIP that is not translated, a link-local address).
type peer struct {
	name              string
	ip                string
	podLabels, nsLabs map[string]string
}

var (
	gatewayPod = map[string]string{"app.kubernetes.io/name": "otelcol-relay", "app.kubernetes.io/component": "gateway"}
	agentPod   = map[string]string{"app.kubernetes.io/name": "otelcol-relay", "app.kubernetes.io/component": "agent"}
	kubeSystem = map[string]string{"kubernetes.io/metadata.name": "kube-system"}
)

// The DNS servers a collector pod may be told to use, as its egress policy sees them.
var dnsServers = []peer{
	{name: "CoreDNS pod labelled k8s-app=kube-dns", ip: "10.244.0.10", podLabels: map[string]string{"k8s-app": "kube-dns"}, nsLabs: kubeSystem},
	{name: "NodeLocal DNSCache on its link-local address", ip: "169.254.20.10"},
	{name: "NodeLocal DNSCache on the kube-dns ClusterIP (iptables mode, not DNATed)", ip: "10.96.0.10"},
	{name: "CoreDNS pod with another label", ip: "10.244.0.11", podLabels: map[string]string{"k8s-app": "coredns"}, nsLabs: kubeSystem},
}

// TestDeployNetworkPolicyDNS evaluates the rendered NetworkPolicies of every
// overlay the way the API defines them (the union of the rules of every policy
// that selects the pod) for each collector pod and each DNS setup: UDP and TCP
// to port 53 must be allowed. A destination nothing allows stays denied, so the
// evaluation can fail.
func TestDeployNetworkPolicyDNS(t *testing.T) {
	for _, o := range append([]string{"../base", "../agent"}, manifest.Overlays()...) {
		pols := networkPolicies(t, manifest.Dir("overlays", o))
		for _, pod := range []map[string]string{gatewayPod, agentPod} {
			// Only a policy with Egress isolates a pod's egress: deploy/agent's
			// ingress rule for the relay does not, alone.
			if !selectsAny(withType(pols, networkingv1.PolicyTypeEgress), pod) {
				continue
			}
			for _, dst := range dnsServers {
				for _, proto := range []corev1.Protocol{corev1.ProtocolUDP, corev1.ProtocolTCP} {
					if !egressAllowed(t, pols, pod, dst, proto, 53) {
						t.Errorf("%s: %s pod cannot reach DNS at %s (%s) on %s/53", o, pod["app.kubernetes.io/component"], dst.ip, dst.name, proto)
					}
				}
			}
			if egressAllowed(t, pols, pod, peer{name: "a database", ip: "10.0.0.5"}, corev1.ProtocolTCP, 5432) {
				t.Errorf("%s: %s pod may reach 10.0.0.5:5432; the evaluation or the policy is wrong", o, pod["app.kubernetes.io/component"])
			}
		}
	}
}

// TestDeployAgentNetworkPolicy: the agent is selected by a policy that admits
// OTLP from pods only (not from node addresses), and lets it reach the gateway.
func TestDeployAgentNetworkPolicy(t *testing.T) {
	pols := networkPolicies(t, manifest.Dir("agent"))
	if !selectsAny(pols, agentPod) {
		t.Fatal("no NetworkPolicy selects the agent pods")
	}
	app := peer{name: "an application pod", ip: "10.244.3.7", podLabels: map[string]string{"app": "checkout"}, nsLabs: map[string]string{"kubernetes.io/metadata.name": "payments"}}
	node := peer{name: "a node address (hostNetwork)", ip: "10.0.1.4"}
	for _, port := range []int32{4317, 4318} {
		if !ingressAllowed(t, pols, agentPod, app, port) {
			t.Errorf("an application pod cannot send OTLP to the agent on %d", port)
		}
		if ingressAllowed(t, pols, agentPod, node, port) {
			t.Errorf("a node address may send OTLP to the agent on %d: its identity would be the node's", port)
		}
	}
	gw := peer{name: "gateway", ip: "10.244.5.5", podLabels: gatewayPod, nsLabs: map[string]string{"kubernetes.io/metadata.name": "otelcol-relay"}}
	if !egressAllowed(t, pols, agentPod, gw, corev1.ProtocolTCP, 4317) {
		t.Error("the agent cannot reach the gateway on 4317")
	}
	if ingressAllowed(t, pols, agentPod, app, 8888) {
		t.Error("the agent's metrics port is open to every pod")
	}
}

func networkPolicies(t *testing.T, dir string) []networkingv1.NetworkPolicy {
	t.Helper()
	var pols []networkingv1.NetworkPolicy
	for _, doc := range manifest.Docs(t, dir) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Kind == "NetworkPolicy" {
			var np networkingv1.NetworkPolicy
			manifest.Unmarshal(t, doc, &np)
			pols = append(pols, np)
		}
	}
	return pols
}

func selector(t *testing.T, s *metav1.LabelSelector) labels.Selector {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func selectsAny(pols []networkingv1.NetworkPolicy, pod map[string]string) bool {
	for _, p := range pols {
		if sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector); err == nil && sel.Matches(labels.Set(pod)) {
			return true
		}
	}
	return false
}

// withType: the policies among pols whose policyTypes name typ.
func withType(pols []networkingv1.NetworkPolicy, typ networkingv1.PolicyType) []networkingv1.NetworkPolicy {
	var out []networkingv1.NetworkPolicy
	for _, p := range pols {
		if hasType(p, typ) {
			out = append(out, p)
		}
	}
	return out
}

func hasType(p networkingv1.NetworkPolicy, typ networkingv1.PolicyType) bool {
	for _, pt := range p.Spec.PolicyTypes {
		if pt == typ {
			return true
		}
	}
	return false
}

// peerMatches applies one NetworkPolicyPeer to a peer. A pod or namespace
// selector only ever matches pods; an ipBlock matches any address in it.
func peerMatches(t *testing.T, np networkingv1.NetworkPolicyPeer, p peer) bool {
	t.Helper()
	if np.IPBlock != nil {
		_, cidr, err := net.ParseCIDR(np.IPBlock.CIDR)
		if err != nil {
			t.Fatal(err)
		}
		if !cidr.Contains(net.ParseIP(p.ip)) {
			return false
		}
		for _, ex := range np.IPBlock.Except {
			if _, e, err := net.ParseCIDR(ex); err == nil && e.Contains(net.ParseIP(p.ip)) {
				return false
			}
		}
		return true
	}
	if p.podLabels == nil {
		return false
	}
	if np.NamespaceSelector != nil && !selector(t, np.NamespaceSelector).Matches(labels.Set(p.nsLabs)) {
		return false
	}
	if np.NamespaceSelector == nil && p.nsLabs["kubernetes.io/metadata.name"] != "otelcol-relay" {
		return false // a podSelector alone means the policy's own namespace
	}
	return np.PodSelector == nil || selector(t, np.PodSelector).Matches(labels.Set(p.podLabels))
}

func portMatches(ports []networkingv1.NetworkPolicyPort, proto corev1.Protocol, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		pr := corev1.ProtocolTCP
		if p.Protocol != nil {
			pr = *p.Protocol
		}
		if pr != proto {
			continue
		}
		if p.Port == nil || (p.Port.IntValue() == int(port) && p.EndPort == nil) || (p.EndPort != nil && int32(p.Port.IntValue()) <= port && port <= *p.EndPort) {
			return true
		}
	}
	return false
}

func peersMatch(t *testing.T, peers []networkingv1.NetworkPolicyPeer, p peer) bool {
	if len(peers) == 0 {
		return true
	}
	for _, np := range peers {
		if peerMatches(t, np, p) {
			return true
		}
	}
	return false
}

func egressAllowed(t *testing.T, pols []networkingv1.NetworkPolicy, pod map[string]string, dst peer, proto corev1.Protocol, port int32) bool {
	t.Helper()
	return allowed(t, pols, pod, networkingv1.PolicyTypeEgress, func(p networkingv1.NetworkPolicy) bool {
		return slices.ContainsFunc(p.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
			return peersMatch(t, r.To, dst) && portMatches(r.Ports, proto, port)
		})
	})
}

// ingressAllowed is whether src may reach pod's TCP port (every ingress the
// policies name is TCP).
func ingressAllowed(t *testing.T, pols []networkingv1.NetworkPolicy, pod map[string]string, src peer, port int32) bool {
	t.Helper()
	return allowed(t, pols, pod, networkingv1.PolicyTypeIngress, func(p networkingv1.NetworkPolicy) bool {
		return slices.ContainsFunc(p.Spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool {
			return peersMatch(t, r.From, src) && portMatches(r.Ports, corev1.ProtocolTCP, port)
		})
	})
}

// allowed is Kubernetes' isolation rule for one direction: a pod that no policy
// of type typ selects is not isolated; one that some do may do only what a rule
// of one of them (allows) lets through.
func allowed(t *testing.T, pols []networkingv1.NetworkPolicy, pod map[string]string, typ networkingv1.PolicyType, allows func(networkingv1.NetworkPolicy) bool) bool {
	t.Helper()
	isolated := false
	for _, p := range pols {
		if !selector(t, &p.Spec.PodSelector).Matches(labels.Set(pod)) || !hasType(p, typ) {
			continue
		}
		isolated = true
		if allows(p) {
			return true
		}
	}
	return !isolated
}
