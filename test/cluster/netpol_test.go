// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// probe is a clustertool probe pod.
type probe struct{ ns, name, labels string }

// startProbe runs clustertool probe in ns with labels. The pod is never Ready (its
// probe port is closed), so a probe carrying the relay's labels never joins the
// relay's Service.
func startProbe(t *testing.T, ns, name, labels string, addrs ...string) probe {
	t.Helper()
	var args strings.Builder
	args.WriteString(`["probe"`)
	for _, a := range addrs {
		args.WriteString(`, "` + a + `"`)
	}
	args.WriteString("]")
	mustKubectl(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s, labels: {%s}}
spec:
  restartPolicy: Never
  containers:
  - name: probe
    image: localhost/otelcol-relay-test/clustertool:1.0
    imagePullPolicy: Never
    args: %s
    readinessProbe: {tcpSocket: {port: 1}, periodSeconds: 30}
`, name, ns, labels, args.String()), "apply", "--server-side", "-f", "-")
	t.Cleanup(func() { _, _ = kubectl(t, "", "-n", ns, "delete", "pod", name, "--wait=false") })
	return probe{ns, name, labels}
}

// result waits for the probe's outcome per address ("OK" or "FAIL ...").
func (p probe) result(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	eventually(t, "probe "+p.name+" done", readyBudget, func() string {
		logs, err := kubectl(t, "", "-n", p.ns, "logs", p.name)
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(logs, "DONE") {
			return "running: " + logs
		}
		for _, l := range strings.Split(logs, "\n") {
			switch {
			case strings.HasPrefix(l, "OK "):
				out[strings.TrimPrefix(l, "OK ")] = "OK"
			case strings.HasPrefix(l, "FAIL "):
				a, why, _ := strings.Cut(strings.TrimPrefix(l, "FAIL "), ": ")
				out[a] = "FAIL " + why
			}
		}
		return ""
	})
	t.Logf("from %s (%s): %v", p.name, p.labels, out)
	return out
}

// TestNetworkPolicyEnforced: with kube-router enforcing the shipped policies, a pod
// that is neither fluent-bit nor an agent cannot reach the relay's receivers; a
// pod with the relay's labels reaches the backend's OTLP port but not a port the
// policy does not open; DNS keeps working for both (the probes dial by name).
func TestNetworkPolicyEnforced(t *testing.T) {
	install(t)
	if _, err := os.Stat(filepath.Join(repoRoot, "bin", "kube-router")); err != nil {
		t.Fatalf("bin/kube-router is not built (hack/kube-peers.sh cluster): nothing enforces NetworkPolicy here")
	}
	relay4318 := "otelcol-relay." + relayNS + ".svc:4318"
	relay4317 := "otelcol-relay." + relayNS + ".svc:4317"
	backendOTLP := "backend." + backendNS + ".svc:4318"
	backendStatus := "backend." + backendNS + ".svc:8080"
	podIP(t, backendNS, "app=backend")
	eventually(t, "a relay Ready", readyBudget, func() string {
		out, _ := kubectl(t, "", "-n", relayNS, "get", "endpointslices", "-l", "kubernetes.io/service-name=otelcol-relay",
			"-o", "jsonpath={.items[*].endpoints[?(@.conditions.ready==true)].addresses[0]}")
		if strings.TrimSpace(out) == "" {
			return "no ready endpoint"
		}
		return ""
	})
	applyTestNamespace(t, "otelcol-relay-np")

	// fluent-bit is admitted from its own namespace only (deploy/fluent-bit's
	// logging, which the install made): the label alone is anyone's to set.
	mustKubectl(t, "", "label", "--overwrite", "namespace", "logging", "otelcol-relay-cluster-test=true")
	// The probes run side by side: each waits for its outcome to settle.
	probes := []probe{
		startProbe(t, "logging", "as-fluent-bit", "app.kubernetes.io/name: fluent-bit", relay4318, relay4317),
		startProbe(t, "otelcol-relay-np", "stranger", "app: stranger", relay4318, relay4317),
		startProbe(t, "otelcol-relay-np", "posing-as-fluent-bit", "app.kubernetes.io/name: fluent-bit", relay4318, relay4317),
		startProbe(t, relayNS, "as-relay",
			"app.kubernetes.io/name: otelcol-relay, app.kubernetes.io/component: gateway", backendOTLP, backendStatus),
	}
	allowed, denied, posing, egress := probes[0].result(t), probes[1].result(t), probes[2].result(t), probes[3].result(t)
	for _, a := range []string{relay4318, relay4317} {
		if allowed[a] != "OK" {
			t.Errorf("a fluent-bit pod in logging cannot reach %s: %s", a, allowed[a])
		}
		for who, got := range map[string]string{"a pod outside the policy's selectors": denied[a], "a pod labelled fluent-bit in another namespace": posing[a]} {
			if !strings.HasPrefix(got, "FAIL") || strings.Contains(got, "no such host") {
				t.Errorf("%s: %s: %q, want refused by the policy (and the name resolved)", who, a, got)
			}
		}
	}
	if egress[backendOTLP] != "OK" {
		t.Errorf("the relay cannot reach the backend's OTLP port %s: %s", backendOTLP, egress[backendOTLP])
	}
	if !strings.HasPrefix(egress[backendStatus], "FAIL") || strings.Contains(egress[backendStatus], "no such host") {
		t.Errorf("the relay reaches %s, a port its policy does not open: %q", backendStatus, egress[backendStatus])
	}
}
