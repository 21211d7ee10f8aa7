// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// TestDeployGatewayIngressByNamespace: a label is something any pod can give
// itself, a namespace's kubernetes.io/metadata.name is not (the API server
// sets it). The relay's OTLP ports admit fluent-bit from its own namespace
// (deploy/fluent-bit's `logging`) and, with deploy/agent, the agents from the
// relay's namespace on their exporter's port 4317, not a pod elsewhere that
// copies their labels.
func TestDeployGatewayIngressByNamespace(t *testing.T) {
	pols := networkPolicies(t, manifest.OverlayOf(t, []string{manifest.Dir("base"), manifest.Dir("agent")}))
	ns := func(name string) map[string]string { return map[string]string{"kubernetes.io/metadata.name": name} }
	fluentBit := map[string]string{"app.kubernetes.io/name": "fluent-bit"}
	for _, tc := range []struct {
		src  peer
		want map[int32]bool
	}{
		{peer{name: "fluent-bit in logging", ip: "10.244.1.5", podLabels: fluentBit, nsLabs: ns("logging")}, map[int32]bool{4317: true, 4318: true}},
		{peer{name: "an agent", ip: "10.244.1.6", podLabels: agentPod, nsLabs: ns("otelcol-relay")}, map[int32]bool{4317: true, 4318: false}},
		{peer{name: "a pod in payments labelled fluent-bit", ip: "10.244.1.7", podLabels: fluentBit, nsLabs: ns("payments")}, map[int32]bool{}},
		{peer{name: "a pod in payments labelled as an agent", ip: "10.244.1.8", podLabels: agentPod, nsLabs: ns("payments")}, map[int32]bool{}},
	} {
		for _, port := range []int32{4317, 4318} {
			if got := ingressAllowed(t, pols, gatewayPod, tc.src, port); got != tc.want[port] {
				t.Errorf("%s may send to the relay's port %d: %v, want %v", tc.src.name, port, got, tc.want[port])
			}
		}
	}
}

// TestDeployAgentsReachTheRelay: wherever deploy/agent goes, the relay admits its
// OTLP on 4317: in each overlay that ships it, and in each that does not with
// agent/ added (a user's kustomization of both). The rule is agent/'s own policy,
// so an overlay that replaces the relay's ingress rule (tigera) keeps it. Whether
// the packets flow is test/cluster's to show.
func TestDeployAgentsReachTheRelay(t *testing.T) {
	agent := peer{name: "an agent", ip: "10.244.1.6", podLabels: agentPod,
		nsLabs: map[string]string{"kubernetes.io/metadata.name": "otelcol-relay"}}
	for _, o := range append([]string{"platform"}, manifest.Overlays()...) {
		dir, what := manifest.Dir("overlays", o), "overlays/"+o
		if len(manifest.Render(t, dir).DaemonSets) == 0 {
			dir, what = manifest.OverlayOf(t, []string{dir, manifest.Dir("agent")}), what+" + agent/"
		}
		if !ingressAllowed(t, networkPolicies(t, dir), gatewayPod, agent, 4317) {
			t.Errorf("%s: the relay's NetworkPolicies drop the agents' OTLP on 4317", what)
		}
	}
}
