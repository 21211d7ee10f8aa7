// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tigeraApply is the last line of deploy/docs/tigera.md's block: the test applies
// its own kustomization of the overlay instead (agent/ added, the test image).
const tigeraApply = "kubectl apply --server-side -k deploy/overlays/tigera"

// TestTigeraOverlayWithAgent installs deploy/overlays/tigera with deploy/agent added,
// as a Calico Enterprise cluster that also wants node metrics would, after
// deploy/docs/tigera.md's commands (verbatim, the apply aside) against stand-ins for
// the operator's objects (tigera-operator's CA ConfigMap and client Secret,
// calico-system's tigera-ca-bundle), and deploy/docs/backends.md's for
// components/backends, which the overlay has. Then the operator's collector (a sender in
// calico-system labelled k8s-app: otel-collector, with a client certificate)
// delivers every numbered record to the backend; the agents' kubelet_stats arrive
// too, through agent/'s own rule at the relay, which the overlay's replacement of
// the relay's ingress rule leaves alone; and fluent-bit in logging, which that rule
// no longer admits, is dropped. The aks install is applied again at the end.
// Federation runs with no Tigera Prometheus to scrape: its own test covers it.
func TestTigeraOverlayWithAgent(t *testing.T) {
	p := install(t)
	pinTwoRelays(t)
	backendIP := podIP(t, backendNS, "app=backend")
	const calico = "calico-system"
	applyTestNamespace(t, calico)
	applyTestNamespace(t, "tigera-operator")

	// What the operator has, in its namespaces: its CA bundle, and (for the load
	// pod, as the operator's collector mounts them) the relay's CA and a client
	// keypair signed by a CA in otelcol-relay-ca.
	create := func(ns string, args ...string) {
		t.Helper()
		obj := mustKubectl(t, "", append(append([]string{"-n", ns, "create"}, args...), "--dry-run=client", "-o", "yaml")...)
		mustKubectl(t, obj, "-n", ns, "apply", "--server-side", "--force-conflicts", "-f", "-")
	}
	create(calico, "configmap", "tigera-ca-bundle", "--from-file=tigera-ca-bundle.crt="+filepath.Join(p.dir, "ca.crt"))
	create(calico, "configmap", "otelcol-relay-ca", "--from-file=ca.crt="+filepath.Join(p.dir, "ca.crt"))
	create(calico, "secret", "tls", "otelcol-relay-fluent-bit-tls",
		"--cert="+filepath.Join(p.dir, "fluent-bit.crt"), "--key="+filepath.Join(p.dir, "fluent-bit.key"))

	// The page's commands, run where its files are: the relay's CA and the
	// collector's client keypair.
	dir := t.TempDir()
	for from, to := range map[string]string{"ca.crt": "relay-ca.crt", "fluent-bit.crt": "client.crt", "fluent-bit.key": "client.key",
		"backend-ca.crt": "corp-ca.crt", "client.crt": "corp-client.crt", "client.key": "corp-client.key"} {
		b, err := os.ReadFile(filepath.Join(p.dir, from))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, to), b)
	}
	block := strings.TrimRight(docBlock(t, "deploy/docs/tigera.md", "## Pointing the operator's collector at the relay", "```sh"), "\n")
	lines := strings.Split(block, "\n")
	if lines[len(lines)-1] != tigeraApply {
		t.Fatalf("deploy/docs/tigera.md's block no longer ends with %q: the test cannot put its overlay in its place", tigeraApply)
	}
	sh(t, dir, nil, strings.Join(lines[:len(lines)-1], "\n"))
	// The overlay has components/backends: its three objects as deploy/docs/backends.md
	// makes them (backends.yaml lists none, so they are mounted and unused).
	sh(t, dir, []string{"CORP_TOKEN=corp-token", "DD_API_KEY=dd-key"},
		docBlock(t, "deploy/docs/backends.md", "## Backends in one list (`components/backends`)", "three objects whose names never change"))

	overlay := t.TempDir()
	writeTestOverlay(t, overlay, []string{"deploy/overlays/tigera", "deploy/agent"},
		[]string{"deploy/components/backend-default-mtls"}, []string{"otelcol-relay", "otelcol-relay-federation"})
	start := time.Now()
	mustKubectl(t, "", "apply", "--server-side", "--force-conflicts", "-k", overlay)
	t.Cleanup(func() {
		mustKubectl(t, "", "-n", relayNS, "delete", "statefulset", "otelcol-relay-federation", "--ignore-not-found", "--wait", "--timeout=3m")
		_, _ = kubectl(t, "", "delete", "clusterrolebinding,clusterrole", "otelcol-relay-tigera-federation", "--ignore-not-found")
		_, _ = kubectl(t, "", "-n", relayNS, "delete", "--ignore-not-found", "configmap/otelcol-relay-tigera-ca-bundle",
			"secret/otelcol-relay-backend-headers", "configmap/otelcol-relay-exporter-cas", "secret/otelcol-relay-exporter-certs")
		_, _ = kubectl(t, "", "delete", "namespace", calico, "tigera-operator", "--wait=false")
		restoreInstall(t)
	})
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "statefulset/otelcol-relay", "--timeout=10m")
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "daemonset/otelcol-relay-agent", "--timeout=5m")
	pinTwoRelays(t) // the apply set the HPA's shipped bounds again
	t.Logf("tigera + agent applied over the aks install and rolled out in %s", time.Since(start).Round(time.Second))

	// fluent-bit's place in the base rule is the operator collector's here.
	relay4318, relay4317 := "otelcol-relay."+relayNS+".svc:4318", "otelcol-relay."+relayNS+".svc:4317"
	fluentBit := startProbe(t, loggingNS, "tigera-as-fluent-bit", "app.kubernetes.io/name: fluent-bit", relay4318, relay4317)

	l := startLoadIn(t, calico, "k8s-app: otel-collector", "tigera", 500, 2)
	time.Sleep(5 * time.Second)
	if _, sc := l.finish(t, backendIP); sc.Missing != 0 {
		t.Errorf("the operator's collector: %d acknowledged records missing (first: %v)", sc.Missing, sc.FirstMissing)
	}

	if err := getJSON("http://"+backendIP+":8080/metrics/reset", nil); err != nil {
		t.Fatal(err)
	}
	want := relayNS + "/otelcol-relay-0"
	eventually(t, "the agents' kubelet_stats through the relay", readyBudget, func() string {
		got, err := podMetrics(t, backendIP)
		if err != nil {
			return err.Error()
		}
		if !got["k8s.pod.cpu."][want] {
			return fmt.Sprintf("no k8s.pod.cpu.* for %s yet (%d pods have one)", want, len(got["k8s.pod.cpu."]))
		}
		return ""
	})

	for addr, res := range fluentBit.result(t) {
		if !strings.HasPrefix(res, "FAIL") {
			t.Errorf("fluent-bit in %s reached %s past the tigera overlay's rule: %s", loggingNS, addr, res)
		}
	}
}
