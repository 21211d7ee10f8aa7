// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// secondBackendNS is the namespace of the second install's own backend.
const secondBackendNS = "otelcol-relay-backend-second"

// TestSecondInstallInOwnNamespace installs the relay a second time, beside the
// package's install, the way a platform team moves it: their own kustomization
// over the same overlay with `namespace:` and `namePrefix:` and nothing else,
// its Secrets made with deploy/README.md's own commands for that namespace, and
// a backend of its own. The second release's ServiceAccounts get their rights
// (the ClusterRoleBindings follow them), its agent finds its own gateway, and an
// application's records sent to its agent reach its backend, and only that one,
// carrying the application pod's identity; the first install keeps running.
func TestSecondInstallInOwnNamespace(t *testing.T) {
	const ns, prefix = "otelcol-relay-second", "second-"
	p := install(t)
	firstBackendIP := podIP(t, backendNS, "app=backend")
	startBackendIn(t, p, secondBackendNS)
	t.Cleanup(func() { _, _ = kubectl(t, "", "delete", "namespace", secondBackendNS, "--wait=false") })
	backendIP := podIP(t, secondBackendNS, "app=backend")

	// The second release's Secrets: the first's material, but a serving
	// certificate for the second gateway's Service, from the same cluster CA.
	dir := t.TempDir()
	for _, f := range []string{"ca.crt", "backend-ca.crt", "agent.crt", "agent.key", "client.crt", "client.key", "fluent-bit.crt", "fluent-bit.key"} {
		b, err := os.ReadFile(filepath.Join(p.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), b)
	}
	svc := prefix + "otelcol-relay." + ns
	gw := p.ca.Peer(t, testcerts.Options{CommonName: svc + ".svc",
		DNSNames: []string{svc, svc + ".svc", svc + ".svc.cluster.local"}})
	writeFile(t, filepath.Join(dir, "gw.crt"), gw.CertPEM)
	writeFile(t, filepath.Join(dir, "gw.key"), gw.KeyPEM)
	block := readmeBlock(t, "## What you create before applying", "**By hand.**")
	if !strings.Contains(block, "\nNS=otelcol-relay\n") && !strings.HasPrefix(block, "NS=otelcol-relay\n") {
		t.Fatal("deploy/README.md's by-hand block no longer starts from NS=otelcol-relay: the test cannot choose its namespace")
	}
	block = strings.Replace(block, "NS=otelcol-relay\n", "NS="+ns+"\n", 1)
	block = strings.ReplaceAll(block, "https://otlp.example.com:4318", "https://backend."+secondBackendNS+".svc:4318")
	sh(t, dir, []string{"TOKEN=cluster-test-token"}, block)

	user := manifest.MovedTo(t, installOverlay, ns, prefix)
	t.Cleanup(func() {
		// The render's objects, the namespace and the cluster-scoped ones with it;
		// logging's, shared with the first install, are not in it.
		if out, err := kubectl(t, "", "delete", "-k", user, "--ignore-not-found", "--timeout=5m"); err != nil {
			t.Errorf("removing the second install: %v\n%s", err, out)
		}
	})
	mustKubectl(t, "", "apply", "--server-side", "-k", user)
	mustKubectl(t, "", "-n", ns, "rollout", "status", "statefulset/"+prefix+"otelcol-relay", "--timeout=10m")
	mustKubectl(t, "", "-n", ns, "rollout", "status", "daemonset/"+prefix+"otelcol-relay-agent", "--timeout=5m")

	for _, sa := range []string{prefix + "otelcol-relay", prefix + "otelcol-relay-agent"} {
		if out, err := kubectl(t, "", "auth", "can-i", "watch", "pods", "--all-namespaces", "--as=system:serviceaccount:"+ns+":"+sa); err != nil || strings.TrimSpace(out) != "yes" {
			t.Errorf("ServiceAccount %s/%s may not watch pods (%q, %v): its ClusterRoleBinding did not follow it", ns, sa, strings.TrimSpace(out), err)
		}
	}

	app := startApp(t, "second-install", "http://"+prefix+"otelcol-relay-agent."+ns+".svc:4318/v1/logs", 100)
	waitAppAtBackend(t, app, backendIP, 200)
	recs := appRecords(t, app, backendIP)
	pod := appPod(t, appNS, "second-install")
	requirePodIdentity(t, "through the second install", recs, pod, appNS)
	t.Logf("through the second install's agent and gateway: %d records, each with k8s.pod.name=%s", len(recs), pod)
	if first, _, err := backendAppRecords(firstBackendIP, app.run); err != nil {
		t.Error(err)
	} else if len(first) > 0 {
		t.Errorf("the first install's backend has %d records of the second install's application", len(first))
	}

	// The first install is untouched: its relays and agent are still all Ready.
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "statefulset/otelcol-relay", "--timeout=2m")
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "daemonset/otelcol-relay-agent", "--timeout=2m")
}
