// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// TestPlatformOverlay installs deploy/cert-manager (the cluster's CA),
// deploy/overlays/platform and deploy/overlays/platform-fluent-bit (without its
// pods) from zero, as deploy/README.md's "Certificates from cert-manager" says,
// on a cluster running the real cert-manager
// controller and trust-manager (built from their Go modules by hack/kube-peers.sh,
// run beside the control plane; the CRDs from the same modules, prometheus-operator's
// for the monitors and rules, which only need to be accepted). The aks install goes
// first (its namespaces deleted, as a user starting over does), so every keypair the
// pods mount is one cert-manager wrote and the CA bundle is trust-manager's. Then:
// every Certificate Ready, the Bundle's ConfigMap in both namespaces holding the CA,
// two relays and the agent Ready with no restart, every numbered record of a sender
// holding fluent-bit's issued keypair at the backend, and the agent's kubelet
// metrics arriving through the gateway on its issued client keypair. Last, the
// CA ConfigMaps as deploy/docs/certificates.md makes them without trust-manager
// (caWithoutTrustManager). The platform install stays until a test after this one
// asks install(t) for the aks one.
func TestPlatformOverlay(t *testing.T) {
	p := install(t)
	backendIP := podIP(t, backendNS, "app=backend")
	for _, b := range []string{"cert-manager-controller", "trust-manager"} {
		if _, err := os.Stat(filepath.Join(repoRoot, "bin", b)); err != nil {
			t.Fatalf("bin/%s is not built (hack/kube-peers.sh cluster)", b)
		}
	}

	// From here the aks install is gone: the next test's install(t) puts it back.
	installState = "replaced"
	start := time.Now()
	mustKubectl(t, "", "delete", "namespace", relayNS, loggingNS, "--timeout=5m")
	t.Logf("the aks install removed in %s", time.Since(start).Round(time.Second))

	// What a cluster with cert-manager and trust-manager has before otelcol-relay.
	mustKubectl(t, "", "create", "namespace", "cert-manager")
	t.Cleanup(func() { _, _ = kubectl(t, "", "delete", "namespace", "cert-manager", "--wait=false") })
	e2e.InstallPlatformCRDs(t, func(args ...string) string { return mustKubectl(t, "", args...) })
	runIssuers(t)

	overlay := t.TempDir()
	writeTestOverlay(t, overlay, []string{"deploy/overlays/platform"},
		[]string{"deploy/components/backend-default-mtls"}, []string{"otelcol-relay"})
	fluentBit := fluentBitWithoutPods(t)
	block := readmeBlock(t, "## Certificates from cert-manager", "only the\nnamespace")
	block = strings.ReplaceAll(block, "https://otlp.example.com:4318", backendURL)
	for from, to := range map[string]string{"-k deploy/overlays/platform-fluent-bit\n": "-k " + fluentBit + "\n", "-k deploy/overlays/platform\n": "-k " + overlay + "\n"} {
		if !strings.Contains(block, from) {
			t.Fatalf("the README's block has no %q:\n%s", strings.TrimSpace(from), block)
		}
		block = strings.ReplaceAll(block, from, to)
	}
	// The cluster's part (deploy/cert-manager) as it is.
	block = strings.ReplaceAll(block, "-k deploy/", "-k "+filepath.Join(repoRoot, "deploy")+"/")
	// The test's backend asks for a client certificate: the by-hand line for
	// components/backend-default-mtls, before the overlay.
	for _, l := range strings.Split(readmeBlock(t, "## What you create before applying", "**By hand.**"), "\n") {
		if strings.Contains(l, "create secret tls otelcol-relay-backend-default-tls") {
			block = strings.Replace(block, "kubectl apply --server-side -k "+overlay+"\n", l+"\nkubectl apply --server-side -k "+overlay+"\n", 1)
		}
	}
	start = time.Now()
	sh(t, p.dir, []string{"TOKEN=cluster-test-token"}, block)
	t.Logf("README commands: Certificates Ready %s after the apply", time.Since(start).Round(100*time.Millisecond))

	// trust-manager's bundle is cert-manager's CA, where the pods and fluent-bit read it.
	ca := mustKubectl(t, "", "-n", "cert-manager", "get", "secret", "otelcol-relay-ca", "-o", `go-template={{index .data "ca.crt" | base64decode}}`)
	for _, ns := range []string{relayNS, loggingNS} {
		eventually(t, "trust-manager's ConfigMap otelcol-relay-ca in "+ns, readyBudget, func() string {
			out, err := kubectl(t, "", "-n", ns, "get", "configmap", "otelcol-relay-ca", "-o", `jsonpath={.data.ca\.crt}`)
			if err != nil {
				return err.Error()
			}
			if !strings.Contains(out, "BEGIN CERTIFICATE") || strings.TrimSpace(out) != strings.TrimSpace(ca) {
				return "not the CA Secret's ca.crt: " + tail(out, 2)
			}
			return ""
		})
	}
	pinTwoRelays(t)
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "daemonset/otelcol-relay-agent", "--timeout=5m")
	t.Logf("relays and agent Ready %s after the apply", time.Since(start).Round(100*time.Millisecond))
	for _, pod := range getPods(t, relayNS).Items {
		for _, c := range pod.Status.ContainerStatuses {
			if c.RestartCount != 0 {
				t.Errorf("pod %s container %s restarted %d times", pod.Metadata.Name, c.Name, c.RestartCount)
			}
		}
	}
	issuer := mustKubectl(t, "", "-n", relayNS, "get", "secret", "otelcol-relay-receiver-tls", "-o", `jsonpath={.metadata.annotations.cert-manager\.io/issuer-name}`)
	if issuer != "otelcol-relay-ca" {
		t.Errorf("Secret otelcol-relay-receiver-tls: issuer-name annotation %q, want otelcol-relay-ca (cert-manager's)", issuer)
	}

	// fluent-bit's side: the load sender mounts what cert-manager and trust-manager
	// wrote into logging, as deploy/fluent-bit does, and checks the name
	// overlays/platform-fluent-bit has fluent-bit check.
	if err := getJSON("http://"+backendIP+":8080/metrics/reset", nil); err != nil {
		t.Fatal(err)
	}
	l := startLoadIn(t, loggingNS, "app.kubernetes.io/name: fluent-bit", "platform", 1000, 2,
		"RELAY_TLS_NAME="+fluentBitTLSName(t))
	time.Sleep(5 * time.Second)
	_, sc := l.finish(t, backendIP)
	if sc.Missing != 0 {
		t.Errorf("%d acknowledged records missing (first: %v)", sc.Missing, sc.FirstMissing)
	}
	// The agent's side: kubelet_stats of the new relay pod, sent to the gateway with
	// the agent's issued keypair, verifying the kubelet's certificate (the base).
	eventually(t, "the agent's kubelet metrics of the new relays at the backend", readyBudget, func() string {
		got, err := podMetrics(t, backendIP)
		if err != nil {
			return err.Error()
		}
		if !got["k8s.pod.cpu."][relayNS+"/otelcol-relay-0"] {
			return fmt.Sprintf("no k8s.pod.cpu.* of otelcol-relay-0 yet (%d pods have one)", len(got["k8s.pod.cpu."]))
		}
		return ""
	})

	caWithoutTrustManager(t, ca)
}

// caWithoutTrustManager runs deploy/docs/certificates.md's block for a cluster
// without trust-manager, as it is written, on the platform install: the CA
// ConfigMaps made from cert-manager's CA Secret. Pointing the Bundle at no namespace
// makes trust-manager delete what it wrote in both (it deletes only targets it
// controls, and leaves the block's alone): the namespaces are then as without
// trust-manager, for a patch instead of a second install. The pods keep their
// mounted files while the ConfigMap is away. ca is the CA Secret's ca.crt.
func caWithoutTrustManager(t *testing.T, ca string) {
	t.Helper()
	const bundle = "bundles.trust.cert-manager.io"
	// An apply of deploy/cert-manager/trust-manager after this test would add its
	// selector to the patch's, and the two together select nothing: the Bundle goes,
	// and that apply makes it anew.
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", bundle, "otelcol-relay-ca", "--ignore-not-found", "--wait=false")
	})
	mustKubectl(t, "", "patch", bundle, "otelcol-relay-ca", "--type=json", "-p",
		`[{"op":"replace","path":"/spec/target/namespaceSelector","value":{"matchLabels":{"otelcol-relay-test/no-namespace":"true"}}}]`)
	for _, ns := range []string{relayNS, loggingNS} {
		eventually(t, "trust-manager deleted ConfigMap otelcol-relay-ca in "+ns, readyBudget, func() string {
			out, err := kubectl(t, "", "-n", ns, "get", "configmap", "otelcol-relay-ca", "--ignore-not-found", "-o", "name")
			if err != nil {
				return err.Error()
			}
			if out != "" {
				return "still there"
			}
			return ""
		})
	}

	sh(t, t.TempDir(), nil, docBlock(t, "deploy/docs/certificates.md", "## Certificates from cert-manager", "Without trust-manager"))

	// The block's ConfigMaps hold the CA, and that CA verifies the certificate the
	// relays serve (what the agents and fluent-bit check with it).
	serving := mustKubectl(t, "", "-n", relayNS, "get", "secret", "otelcol-relay-receiver-tls", "-o", `go-template={{index .data "tls.crt" | base64decode}}`)
	blk, _ := pem.Decode([]byte(serving))
	if blk == nil {
		t.Fatalf("Secret otelcol-relay-receiver-tls: tls.crt holds no PEM block: %q", serving)
	}
	leaf, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatalf("Secret otelcol-relay-receiver-tls: tls.crt: %v", err)
	}
	for _, ns := range []string{relayNS, loggingNS} {
		var cm struct {
			Metadata struct {
				ManagedFields []struct {
					Manager string `json:"manager"`
				} `json:"managedFields"`
			} `json:"metadata"`
			Data map[string]string `json:"data"`
		}
		if err := json.Unmarshal([]byte(mustKubectl(t, "", "-n", ns, "get", "configmap", "otelcol-relay-ca", "-o", "json")), &cm); err != nil {
			t.Fatalf("ConfigMap otelcol-relay-ca in %s: %v", ns, err)
		}
		for _, m := range cm.Metadata.ManagedFields {
			if m.Manager != "kubectl" {
				t.Errorf("ConfigMap otelcol-relay-ca in %s: written by %s too, want only the block's kubectl", ns, m.Manager)
			}
		}
		if cm.Data["ca.crt"] != ca {
			t.Errorf("ConfigMap otelcol-relay-ca in %s: ca.crt is not the CA Secret's:\n%s", ns, cm.Data["ca.crt"])
			continue
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM([]byte(cm.Data["ca.crt"])) {
			t.Errorf("ConfigMap otelcol-relay-ca in %s: ca.crt holds no certificate", ns)
			continue
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "otelcol-relay"}); err != nil {
			t.Errorf("ConfigMap otelcol-relay-ca in %s does not verify the relays' serving certificate: %v", ns, err)
		}
	}
}

// fluentBitWithoutPods is deploy/overlays/platform-fluent-bit without its
// DaemonSet: fluent-bit's image is not on this machine, and its pods would try a
// registry outside it. The test's sender stands in for them (startLoadIn).
func fluentBitWithoutPods(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), fmt.Appendf(nil, `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [%s]
patches:
  - patch: |-
      $patch: delete
      apiVersion: apps/v1
      kind: DaemonSet
      metadata: {name: fluent-bit, namespace: %s}
`, repoRel(t, dir, "deploy", "overlays", "platform-fluent-bit"), loggingNS))
	return dir
}

// fluentBitTLSName is the name overlays/platform-fluent-bit has fluent-bit check
// on the relays' certificate (OTELCOL_RELAY_TLS_NAME, its tls.vhost).
func fluentBitTLSName(t *testing.T) string {
	t.Helper()
	for _, d := range manifest.Render(t, filepath.Join(repoRoot, "deploy", "overlays", "platform-fluent-bit")).DaemonSets {
		if name := manifest.Env(d.Namespace, d.Spec.Template.Spec.Containers[0])["OTELCOL_RELAY_TLS_NAME"]; name != "" {
			return name
		}
	}
	t.Fatal("overlays/platform-fluent-bit sets no OTELCOL_RELAY_TLS_NAME")
	return ""
}

// runIssuers runs cert-manager's controller and trust-manager on the host until the
// test ends, with the cluster's admin kubeconfig, as the control plane runs.
func runIssuers(t *testing.T) {
	t.Helper()
	webhook := t.TempDir()
	kp := testcerts.NewCA(t, "trust-manager-webhook-test").Server(t, testcerts.Options{
		CommonName: "trust-manager", IPs: []net.IP{net.ParseIP("127.0.0.1")}})
	writeFile(t, filepath.Join(webhook, "tls.crt"), kp.CertPEM)
	writeFile(t, filepath.Join(webhook, "tls.key"), kp.KeyPEM)
	// No webhook configuration points at trust-manager's server: it only has to start.
	bin := filepath.Join(repoRoot, "bin")
	e2e.StartProcess(t, "cert-manager-controller", filepath.Join(bin, "cert-manager-controller"),
		"--kubeconfig", kubeconfig, "--cluster-resource-namespace", "cert-manager")
	e2e.StartProcess(t, "trust-manager", filepath.Join(bin, "trust-manager"),
		"--kubeconfig", kubeconfig, "--trust-namespace", "cert-manager",
		"--leader-elect=false", "--readiness-probe-port=0", "--metrics-port=0",
		"--webhook-host=127.0.0.1", "--webhook-port="+strconv.Itoa(e2e.FreePort(t)), "--webhook-certificate-dir="+webhook)
}
