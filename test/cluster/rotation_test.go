// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// TestBackendCertificateRotation replaces, under a numbered load and with the
// README's own kubectl commands, the default backend's client certificate (Secret
// otelcol-relay-backend-default-tls) and its CA (ConfigMap
// otelcol-relay-backend-default, now the old CA and a new one, the first step of a
// CA rotation), and the receivers' serving keypair (Secret
// otelcol-relay-receiver-tls, with deploy/docs/certificates.md's "Rotating a
// certificate" block as it is written). The kubelet's atomic writer swaps the mounted
// directories; certwatch reloads the backend's, and the backend sees requests with
// the new certificate; the receivers serve the new keypair (their reload_interval is
// 10 s here, 5m as shipped); the relay containers are the same
// processes (same container IDs, no restart); nothing is lost.
func TestBackendCertificateRotation(t *testing.T) {
	p := install(t)
	relayEnv(t, "RELAY_OTLP_TLS_RELOAD_INTERVAL=10s")
	pinTwoRelays(t)
	backendIP := podIP(t, backendNS, "app=backend")
	containers := containerIDs(t)
	reloads := certwatchReloads(t)
	l := startLoad(t, "rotation", 1000, 2)
	time.Sleep(5 * time.Second)

	servingBefore := servingSerials(t, p)
	// Valid for months, as newPKI's: the install keeps them, and a certificate that
	// expires within a week fires OtelcolRelayCertificateExpiringSoon in the tests
	// after this one (TestAlertsFireOnFaults wants none while healthy).
	now := time.Now()
	valid := now.Add(90 * 24 * time.Hour)
	client := p.backendCA.Client(t, testcerts.Options{CommonName: "otelcol-relay", NotAfter: valid})
	next := testcerts.NewCAWithValidity(t, "otelcol-relay-cluster-test-backend-ca-next", now.Add(-time.Hour), valid)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "client.crt"), client.CertPEM)
	writeFile(t, filepath.Join(dir, "client.key"), client.KeyPEM)
	writeFile(t, filepath.Join(dir, "ca.crt"), testcerts.Bundle(p.backendCA, next))
	gw := p.ca.Peer(t, relayServing(valid))
	writeFile(t, filepath.Join(dir, "gw.crt"), gw.CertPEM)
	writeFile(t, filepath.Join(dir, "gw.key"), gw.KeyPEM)
	endpoint := strings.TrimSpace(mustKubectl(t, "", "-n", relayNS, "get", "configmap", "otelcol-relay-backend-default", "-o", "jsonpath={.data.endpoint}"))
	start := time.Now()
	// The README's create commands, as a replacement: --dry-run=client -o yaml | apply.
	sh(t, dir, []string{"NS=" + relayNS, "ENDPOINT=" + endpoint}, `
kubectl -n $NS create secret tls otelcol-relay-backend-default-tls --cert=client.crt --key=client.key --dry-run=client -o yaml | kubectl apply -f -
kubectl -n $NS create configmap otelcol-relay-backend-default --from-literal=endpoint="$ENDPOINT" --from-file=ca.crt=ca.crt --dry-run=client -o yaml | kubectl apply -f -
`)
	// The receivers' keypair with deploy/docs/certificates.md's own block, verbatim:
	// what a user who rotates it runs, in the directory that holds gw.crt and gw.key.
	sh(t, dir, []string{"NS=" + relayNS},
		docBlock(t, "deploy/docs/certificates.md", "## Rotating a certificate", "The receivers' serving keypair"))
	eventually(t, "the backend sees the new client certificate", readyBudget, func() string {
		var seen map[string]time.Time
		if err := getJSON("http://"+backendIP+":8080/clients", &seen); err != nil {
			return err.Error()
		}
		if at, ok := seen[client.Serial()]; !ok || at.Before(start) {
			return fmt.Sprintf("serials seen: %d", len(seen))
		}
		return ""
	})
	t.Logf("the backend saw the new client certificate %s after the Secret changed", time.Since(start).Round(time.Second))
	eventually(t, "every relay's certwatch reloaded", readyBudget, func() string {
		now := certwatchReloads(t)
		for n, v := range reloads {
			if now[n] <= v {
				return fmt.Sprintf("%s: %.0f reloads, %.0f before", n, now[n], v)
			}
		}
		return ""
	})
	eventually(t, "every relay's receivers serve the new keypair", readyBudget, func() string {
		for n, serial := range servingSerials(t, p) {
			if serial != gw.Serial() {
				return fmt.Sprintf("%s serves %s (before: %s), want %s", n, serial, servingBefore[n], gw.Serial())
			}
		}
		return ""
	})
	t.Logf("every relay serves the new receiver certificate %s after the Secret changed", time.Since(start).Round(time.Second))
	for n, id := range containerIDs(t) {
		if containers[n] != id {
			t.Errorf("pod %s: container %s, before the rotation %s: restarted", n, id, containers[n])
		}
	}
	_, sc := l.finish(t, backendIP)
	if sc.Missing != 0 {
		t.Errorf("%d acknowledged records never reached the backend (first: %v)", sc.Missing, sc.FirstMissing)
	}
}

// containerIDs is each relay pod's container ID with its restart count.
func containerIDs(t *testing.T) map[string]string {
	t.Helper()
	out := mustKubectl(t, "", "-n", relayNS, "get", "pods", "-l", "app.kubernetes.io/component=gateway", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.containerStatuses[0].containerID}/{.status.containerStatuses[0].restartCount}{"\n"}{end}`)
	ids := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			ids[f[0]] = f[1]
		}
	}
	return ids
}

func certwatchReloads(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for n, p := range relayPods(t) {
		v, err := selfMetric(p.ip, "otelcol_certwatch_reloads", `extension="certwatch/default"`, `result="success"`)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = v
	}
	return out
}

// servingSerials is the serial of the certificate each relay pod's OTLP/HTTP
// receiver presents now, dialed from the node with fluent-bit's client certificate.
func servingSerials(t *testing.T, p *pki) map[string]string {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(p.dir, "fluent-bit.crt"), filepath.Join(p.dir, "fluent-bit.key"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for n, pod := range relayPods(t) {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort(pod.ip, "4318"), &tls.Config{
			RootCAs: p.ca.Pool(), ServerName: "otelcol-relay." + relayNS + ".svc", Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12,
		})
		if err != nil {
			out[n] = "dial: " + err.Error()
			continue
		}
		out[n] = c.ConnectionState().PeerCertificates[0].SerialNumber.String()
		c.Close()
	}
	return out
}
