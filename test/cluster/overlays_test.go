// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// TestExampleBackendOverlay moves the install to deploy/overlays/example-backend as a
// user adds a second backend: the example backend's files (its CA, a client keypair,
// an API key) turned into its ConfigMap and Secrets with deploy/README.md's own
// commands, then `kubectl apply -k` of the overlay (with the test node's CPU request
// and the default backend's mutual TLS, as the install has). Every numbered record
// must reach both backends: the default one over OTLP/HTTP, the example one over
// OTLP/gRPC with its client certificate and X-API-Key. The aks install is applied
// again at the end (restoreInstall), for the tests after this one. Both applies take the fields
// earlier tests changed with `kubectl set env` (--force-conflicts), as an operator
// going back to the manifests does.
func TestExampleBackendOverlay(t *testing.T) {
	p := install(t)
	pinTwoRelays(t)
	backendIP := podIP(t, backendNS, "app=backend")

	client := p.backendCA.Client(t, testcerts.Options{CommonName: "otelcol-relay-example"})
	writeFile(t, filepath.Join(p.dir, "example-ca.crt"), p.backendCA.CertPEM)
	writeFile(t, filepath.Join(p.dir, "example-client.crt"), client.CertPEM)
	writeFile(t, filepath.Join(p.dir, "example-client.key"), client.KeyPEM)
	block := readmeBlock(t, "## What you create before applying", "`overlays/example-backend` also needs")
	block = strings.ReplaceAll(block, "https://otlp.example.net:4317", "https://backend."+backendNS+".svc:4317")
	sh(t, p.dir, []string{"NS=" + relayNS, "EXAMPLE_API_KEY=" + exampleAPIKey}, block)

	overlay := t.TempDir()
	writeTestOverlay(t, overlay, []string{"deploy/overlays/example-backend"},
		[]string{"deploy/components/backend-default-mtls"}, []string{"otelcol-relay"})
	start := time.Now()
	mustKubectl(t, "", "apply", "--server-side", "--force-conflicts", "-k", overlay)
	t.Cleanup(func() { restoreInstall(t) })
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "statefulset/otelcol-relay", "--timeout=10m")
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "daemonset/otelcol-relay-agent", "--timeout=5m")
	pinTwoRelays(t) // the apply set the HPA's shipped bounds again
	t.Logf("example-backend applied over the aks install and rolled out in %s", time.Since(start).Round(time.Second))

	l := startLoad(t, "example", 1000, 2)
	time.Sleep(5 * time.Second)
	st, sc := l.finish(t, backendIP)
	if sc.Missing != 0 {
		t.Errorf("default backend: %d acknowledged records missing (first: %v)", sc.Missing, sc.FirstMissing)
	}
	var ex seqCount
	eventually(t, "the example backend (OTLP/gRPC) has every number", readyBudget, func() string {
		if err := getJSON(fmt.Sprintf("http://%s:8080/seq?run=grpc:example&upto=%d", backendIP, st.Assigned), &ex); err != nil {
			return err.Error()
		}
		if ex.Missing != 0 {
			return fmt.Sprintf("%+v", ex)
		}
		return ""
	})
	t.Logf("example backend: %d distinct, %d missing, %d duplicates of %d acknowledged", ex.Distinct, ex.Missing, ex.Duplicates, st.Acked)
}
