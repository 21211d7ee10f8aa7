// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"strings"
	"testing"
)

// TestFederationFromInClusterPrometheus adds federation to the install as
// deploy/README.md says for a plain in-cluster Prometheus (components/federation,
// components/federation-plain-http, ConfigMap otelcol-relay-federation with the
// README's own command), against a real Prometheus (Debian's, FROM scratch) that
// scrapes itself in namespace monitoring, labelled as kube-prometheus-stack's pods are
// (the label the federation NetworkPolicy admits). The backend must get its series typed
// from the server's metadata: a counter as a monotonic Sum, a gauge as a Gauge
// (/federate's text has no types: without federation_types both are gauges).
func TestFederationFromInClusterPrometheus(t *testing.T) {
	p := install(t)
	backendIP := podIP(t, backendNS, "app=backend")
	startFederatedPrometheus(t)

	sh(t, p.dir, []string{"NS=" + relayNS}, readmeBlock(t, "## What you create before applying", "With `components/federation`"))
	overlay := t.TempDir()
	writeTestOverlay(t, overlay, []string{"test/cluster/overlays/aks"}, []string{
		"deploy/components/federation",
		"deploy/components/federation-plain-http",
		"deploy/components/backend-default-mtls",
	}, []string{"otelcol-relay-federation"})
	// --force-conflicts: the manifests take back what earlier tests set with kubectl.
	mustKubectl(t, "", "apply", "--server-side", "--force-conflicts", "-k", overlay)
	t.Cleanup(func() { removeFederation(t) })
	podIP(t, relayNS, "app.kubernetes.io/component=federation")

	eventually(t, "the backend has the Prometheus server's series, typed", readyBudget, func() string {
		return federatedSeriesTyped(backendIP)
	})
	t.Logf("federated through %s: %v", "prometheus.monitoring.svc:9090", federatedTypes)
}

// startFederatedPrometheus runs a real Prometheus (Debian's, FROM scratch) that
// scrapes itself, in namespace monitoring as Service prometheus:9090, labelled
// as kube-prometheus-stack's pods are (the label the federation NetworkPolicy
// admits), and waits for it to be Ready. removeFederation takes it away.
func startFederatedPrometheus(t *testing.T) {
	t.Helper()
	applyTestNamespace(t, "monitoring")
	mustKubectl(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: prometheus, namespace: monitoring}
data:
  prometheus.yml: |
    global: {scrape_interval: 5s}
    scrape_configs:
    - job_name: prometheus
      static_configs: [{targets: ["localhost:9090"]}]
---
apiVersion: v1
kind: Service
metadata: {name: prometheus, namespace: monitoring}
spec:
  selector: {app.kubernetes.io/name: prometheus}
  ports: [{name: http, port: 9090}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: prometheus, namespace: monitoring}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: prometheus}}
  template:
    # The label the federation NetworkPolicy admits (as kube-prometheus-stack's pods carry it).
    metadata: {labels: {app.kubernetes.io/name: prometheus}}
    spec:
      containers:
      - name: prometheus
        image: localhost/otelcol-relay-test/prometheus:1.0
        imagePullPolicy: Never
        args: [--config.file=/etc/prometheus/prometheus.yml, --storage.tsdb.path=/prometheus, --web.listen-address=:9090]
        ports: [{containerPort: 9090}]
        readinessProbe: {httpGet: {path: /-/ready, port: 9090}, periodSeconds: 2}
        volumeMounts:
        - {name: config, mountPath: /etc/prometheus}
        - {name: data, mountPath: /prometheus}
      volumes:
      - {name: config, configMap: {name: prometheus}}
      - {name: data, emptyDir: {}}
`, "apply", "--server-side", "-f", "-")
	podIP(t, "monitoring", "app.kubernetes.io/name=prometheus")
}

// removeFederation puts the install without federation back, for the tests after
// this one: the federation StatefulSet and the Prometheus server go (apply does
// not prune them), then the install's overlay is applied again.
func removeFederation(t *testing.T) {
	t.Helper()
	mustKubectl(t, "", "-n", relayNS, "delete", "statefulset", "otelcol-relay-federation", "--ignore-not-found", "--wait", "--timeout=3m")
	_, _ = kubectl(t, "", "delete", "namespace", "monitoring", "--wait=false")
	restoreInstall(t)
}

// federatedTypes are series of startFederatedPrometheus's server and the type a
// backend must get each with: restored from the server's metadata (/federate's
// text has no types: without federation_types both are gauges).
var federatedTypes = map[string]string{"prometheus_http_requests_total": "Sum", "go_goroutines": "Gauge"}

// federatedSeriesTyped is "" once the backend at backendIP has every series of
// federatedTypes with its type, or what it lacks.
func federatedSeriesTyped(backendIP string) string {
	var ms []struct {
		Name      string            `json:"name"`
		Type      string            `json:"type"`
		Monotonic bool              `json:"monotonic"`
		Resource  map[string]string `json:"resource"`
	}
	if err := getJSON("http://"+backendIP+":8080/metrics", &ms); err != nil {
		return err.Error()
	}
	got := map[string]string{}
	for _, m := range ms {
		if _, ok := federatedTypes[m.Name]; ok {
			got[m.Name] = m.Type
			if m.Type == "Sum" && !m.Monotonic {
				got[m.Name] = "Sum (not monotonic)"
			}
		}
	}
	var why []string
	for n, typ := range federatedTypes {
		if got[n] != typ {
			why = append(why, fmt.Sprintf("%s is %q, want %s", n, got[n], typ))
		}
	}
	return strings.Join(why, "; ")
}
