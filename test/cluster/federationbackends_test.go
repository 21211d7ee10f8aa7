// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// federationBackendNS is the namespace of the backend federation lists for itself.
const federationBackendNS = "otelcol-relay-backend-federation"

// The section of deploy/docs/federation.md this test follows.
const (
	fedBackendsDoc     = "deploy/docs/federation.md"
	fedBackendsSection = "## Federated metrics to other backends"
)

// TestFederationToItsOwnBackends is TestFederationFromInClusterPrometheus with a
// second backend listed for federation, as deploy/docs/federation.md says: the
// components its my-aks block lists (plus the plain-http Prometheus and the
// default backend's mutual TLS of the install), the material made with the
// doc's own commands, and its my-federation kustomization and backends.yaml
// verbatim over them but for the endpoint, which is the test's second backend
// (OTLP/HTTP with mutual TLS, in a namespace of its own). The federated series
// must arrive, typed, at that backend as well as at the default one.
func TestFederationToItsOwnBackends(t *testing.T) {
	p := install(t)
	defaultIP := podIP(t, backendNS, "app=backend")
	startBackendIn(t, p, federationBackendNS)
	t.Cleanup(func() { _, _ = kubectl(t, "", "delete", "namespace", federationBackendNS, "--wait=false") })
	listedIP := podIP(t, federationBackendNS, "app=backend")
	startFederatedPrometheus(t)

	material := corpMaterial(t, p)
	sh(t, p.dir, []string{"NS=" + relayNS}, readmeBlock(t, "## What you create before applying", "With `components/federation`"))
	sh(t, material, []string{"CORP_TOKEN=cluster-test-federation-token"}, docBlock(t, fedBackendsDoc, fedBackendsSection, "Then the material"))
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "-n", relayNS, "delete", "secret", "otelcol-relay-backend-headers", "otelcol-relay-exporter-certs", "--ignore-not-found")
		_, _ = kubectl(t, "", "-n", relayNS, "delete", "configmap", "otelcol-relay-exporter-cas", "--ignore-not-found")
	})

	// my-aks: the install's overlay with the doc's components after its own.
	var myAKS struct {
		Components []string `json:"components"`
	}
	if err := yaml.Unmarshal([]byte(docFence(t, fedBackendsDoc, fedBackendsSection, "```yaml\n# my-aks/kustomization.yaml", "yaml")), &myAKS); err != nil {
		t.Fatal(err)
	}
	var components []string
	for _, c := range myAKS.Components {
		repo, ok := strings.CutPrefix(c, "../")
		if !ok {
			t.Fatalf("%s: component %q is not a path from my-aks", fedBackendsDoc, c)
		}
		components = append(components, repo)
	}
	// After federation, as every component that patches it.
	components = append(components, "deploy/components/federation-plain-http", "deploy/components/backend-default-mtls")
	root := t.TempDir()
	writeTestOverlay(t, mkdir(t, root, "my-aks"), []string{"test/cluster/overlays/aks"}, components, []string{"otelcol-relay-federation"})
	// my-federation: the doc's kustomization and list, the list sending to the
	// test's second backend.
	myFederation := mkdir(t, root, "my-federation")
	writeFile(t, filepath.Join(myFederation, "kustomization.yaml"),
		[]byte(docFence(t, fedBackendsDoc, fedBackendsSection, "```yaml\n# my-federation/kustomization.yaml", "yaml")))
	list := docFence(t, fedBackendsDoc, fedBackendsSection, "```yaml\n# my-federation/backends.yaml", "yaml")
	const docEndpoint = "https://otlp.corp.example:4318"
	if !strings.Contains(list, docEndpoint) {
		t.Fatalf("%s's backends.yaml no longer sends to %s: the test cannot point it at its backend", fedBackendsDoc, docEndpoint)
	}
	list = strings.ReplaceAll(list, docEndpoint, "https://backend."+federationBackendNS+".svc:4318")
	writeFile(t, filepath.Join(myFederation, "backends.yaml"), []byte(list))

	// --force-conflicts: the manifests take back what earlier tests set with kubectl.
	mustKubectl(t, "", "apply", "--server-side", "--force-conflicts", "-k", myFederation)
	t.Cleanup(func() { removeFederation(t) })
	podIP(t, relayNS, "app.kubernetes.io/component=federation")

	for name, ip := range map[string]string{"the default backend": defaultIP, "federation's listed backend": listedIP} {
		eventually(t, name+" has the Prometheus server's series, typed", readyBudget, func() string {
			return federatedSeriesTyped(ip)
		})
	}
	t.Logf("federated through prometheus.monitoring.svc:9090 to the default backend and to backend.%s: %v", federationBackendNS, federatedTypes)
}

// corpMaterial is a directory with the material deploy/docs/backends.md and
// federation.md make their objects from, under their file names: the test
// backends' CA (they share one) and the client keypair they accept.
func corpMaterial(t *testing.T, p *pki) string {
	t.Helper()
	material := t.TempDir()
	for to, from := range map[string]string{"corp-ca.crt": "backend-ca.crt", "corp-client.crt": "client.crt", "corp-client.key": "client.key"} {
		b, err := os.ReadFile(filepath.Join(p.dir, from))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(material, to), b)
	}
	return material
}

// mkdir makes dir/name and returns it.
func mkdir(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}
