// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"strings"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// TestDeployGatewayIngressByNamespace: a label is something any pod can give
// itself, a namespace's kubernetes.io/metadata.name is not (the API server
// sets it). The relay's OTLP ports admit fluent-bit from its own namespace
// (deploy/fluent-bit's `logging`) and the agents from the relay's namespace,
// not a pod elsewhere that copies their labels.
func TestDeployGatewayIngressByNamespace(t *testing.T) {
	pols := networkPolicies(t, manifest.Dir("base"))
	ns := func(name string) map[string]string { return map[string]string{"kubernetes.io/metadata.name": name} }
	fluentBit := map[string]string{"app.kubernetes.io/name": "fluent-bit"}
	for _, tc := range []struct {
		src  peer
		want bool
	}{
		{peer{name: "fluent-bit in logging", ip: "10.244.1.5", podLabels: fluentBit, nsLabs: ns("logging")}, true},
		{peer{name: "an agent", ip: "10.244.1.6", podLabels: agentPod, nsLabs: ns("otelcol-relay")}, true},
		{peer{name: "a pod in payments labelled fluent-bit", ip: "10.244.1.7", podLabels: fluentBit, nsLabs: ns("payments")}, false},
		{peer{name: "a pod in payments labelled as an agent", ip: "10.244.1.8", podLabels: agentPod, nsLabs: ns("payments")}, false},
	} {
		for _, port := range []int32{4317, 4318} {
			if got := ingressAllowed(t, pols, gatewayPod, tc.src, port); got != tc.want {
				t.Errorf("%s may send to the relay's port %d: %v, want %v", tc.src.name, port, got, tc.want)
			}
		}
	}
}

// TestDeployAgentsReachTheRelay: an overlay that ships the node agent admits it at
// the relay's OTLP port. The tigera overlay replaces the relay's ingress with the
// operator's collector alone and ships no agent; an agent added to it would be
// dropped, which deploy/README.md's tigera section must say.
func TestDeployAgentsReachTheRelay(t *testing.T) {
	agent := peer{name: "an agent", ip: "10.244.1.6", podLabels: agentPod,
		nsLabs: map[string]string{"kubernetes.io/metadata.name": "otelcol-relay"}}
	for _, o := range append([]string{"platform"}, manifest.Overlays()...) {
		dir := manifest.Dir("overlays", o)
		admitted := ingressAllowed(t, networkPolicies(t, dir), gatewayPod, agent, 4317)
		if len(manifest.Render(t, dir).DaemonSets) > 0 {
			if !admitted {
				t.Errorf("overlay %s ships the agent, and the relay's NetworkPolicy drops its OTLP on 4317", o)
			}
			continue
		}
		if !admitted && !strings.Contains(strings.Join(strings.Fields(readDoc(t, "deploy/README.md")), " "), "an overlay that adds `agent/` to it must add the agents back") {
			t.Errorf("overlay %s's relay drops the agents' OTLP, and deploy/README.md does not say that adding agent/ needs them back in the rule", o)
		}
	}
}
