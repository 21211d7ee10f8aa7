// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The namespaces of the routing test: two teams' applications and the backend
// each team's records go to.
const (
	teamANS        = "otelcol-relay-team-a"
	teamBNS        = "otelcol-relay-team-b"
	teamABackendNS = "otelcol-relay-backend-team-a"
	teamBBackendNS = "otelcol-relay-backend-team-b"
)

// routedBackends is the relay's backends list: each team's namespace to its own
// backend (OTLP/HTTP with mutual TLS, from deploy/docs/backends.md's objects),
// logs only, with a queue the test's volume holds beside the default backend's.
func routedBackends() string {
	var list strings.Builder
	list.WriteString("backends:\n")
	for _, team := range []string{"team-a", "team-b"} {
		fmt.Fprintf(&list, `  - name: %s
    endpoint: https://backend.otelcol-relay-backend-%s.svc:4318
    protocol: http
    signals: [logs]
    route: {namespaces: [%s]}
    tls: {ca_file: /certs/exporter-cas/corp.crt, cert_file: /certs/exporter-certs/corp.crt, key_file: /certs/exporter-certs/corp.key}
    exporter: {sending_queue: {queue_size: 67108864}}
`, team, team, "otelcol-relay-"+team)
	}
	return list.String()
}

// TestRoutedBackendsByNamespace runs applications in two namespaces that send
// plain OTLP/HTTP to the node agent's Service, naming no pod; a third in team-a
// names itself a pod of team-b in every record. The relay, with components/backends
// and the list above, sends team-a's records to team-a's backend and team-b's to
// team-b's, and all of them to the default backend: the namespace a route reads
// is the one the agent resolved from the connection.
func TestRoutedBackendsByNamespace(t *testing.T) {
	p := install(t)
	defaultIP := podIP(t, backendNS, "app=backend")
	for _, ns := range []string{teamABackendNS, teamBBackendNS} {
		startBackendIn(t, p, ns)
	}
	for _, ns := range []string{teamANS, teamBNS} {
		applyTestNamespace(t, ns)
	}
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", "namespace", teamANS, teamBNS, teamABackendNS, teamBBackendNS, "--wait=false")
	})

	// The backends' material as deploy/docs/backends.md makes it (its corp files).
	material := corpMaterial(t, p)
	sh(t, material, []string{"NS=" + relayNS, "CORP_TOKEN=corp-token", "DD_API_KEY=dd-key"},
		docBlock(t, "deploy/docs/backends.md", "## Backends in one list (`components/backends`)", "three objects whose names never change"))

	// The install's overlay with components/backends, and the list over it.
	root := t.TempDir()
	inner := mkdir(t, root, "with-backends")
	writeTestOverlay(t, inner, []string{"test/cluster/overlays/aks"},
		[]string{"deploy/components/backends", "deploy/components/backend-default-mtls"}, nil)
	outer := mkdir(t, root, "routed")
	writeFile(t, filepath.Join(outer, "backends.yaml"), []byte(routedBackends()))
	writeFile(t, filepath.Join(outer, "kustomization.yaml"), []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../with-backends]
configMapGenerator:
  - name: otelcol-relay-config
    behavior: merge
    files: [backends.yaml]
`))
	mustKubectl(t, "", "apply", "--server-side", "--force-conflicts", "-k", outer)
	t.Cleanup(func() {
		restoreInstall(t)
		_, _ = kubectl(t, "", "-n", relayNS, "delete", "--ignore-not-found",
			"secret/otelcol-relay-backend-headers", "configmap/otelcol-relay-exporter-cas", "secret/otelcol-relay-exporter-certs")
	})
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "statefulset/otelcol-relay", "--timeout=10m")
	ips := map[string]string{"default": defaultIP, "team-a": podIP(t, teamABackendNS, "app=backend"), "team-b": podIP(t, teamBBackendNS, "app=backend")}

	agent := "http://otelcol-relay-agent." + relayNS + ".svc:4318/v1/logs"
	apps := map[string]*load{
		"a": startAppIn(t, teamANS, "route-a", agent, 100),
		"b": startAppIn(t, teamBNS, "route-b", agent, 100),
		// Names a team-b pod in every record; its connection is team-a's.
		"claims-b": startAppIn(t, teamANS, "route-claims-b", agent, 50,
			"IDENTITY=claimed", "POD_NAMESPACE="+teamBNS, "POD_NAME=app-route-b-0", "POD_UID=00000000-0000-4000-8000-000000000b0b"),
	}
	time.Sleep(20 * time.Second)
	acked := map[string]int64{}
	for k, l := range apps {
		acked[k] = l.stop(t, "app").Acked
	}
	want := map[string][]string{"team-a": {"a", "claims-b"}, "team-b": {"b"}, "default": {"a", "b", "claims-b"}}
	wantNS := map[string]string{"a": teamANS, "claims-b": teamANS, "b": teamBNS}
	counts := map[string]map[string]int{}
	for backend, ip := range ips {
		counts[backend] = map[string]int{}
		eventually(t, backend+"'s backend has every acknowledged number of its routes", readyBudget, func() string {
			for _, k := range want[backend] {
				recs, seen, err := backendAppRecords(ip, apps[k].run)
				if err != nil {
					return err.Error()
				}
				if int64(len(seen)) < acked[k] {
					return fmt.Sprintf("%s: %d of %d numbers", apps[k].run, len(seen), acked[k])
				}
				counts[backend][k] = len(recs)
				for _, r := range recs {
					if r.Resource["k8s.namespace.name"] != wantNS[k] {
						t.Fatalf("%s: record %q arrived under namespace %q, want %q (resource %v)", backend, r.Body, r.Resource["k8s.namespace.name"], wantNS[k], r.Resource)
					}
				}
			}
			return ""
		})
		for k := range apps {
			if slices.Contains(want[backend], k) {
				continue
			}
			if recs, _, err := backendAppRecords(ip, apps[k].run); err != nil || len(recs) != 0 {
				t.Errorf("%s: holds %d records of %s, which its route does not select (%v)", backend, len(recs), apps[k].run, err)
			}
		}
	}
	t.Logf("acknowledged: team-a app %d, team-b app %d, team-a app claiming team-b %d", acked["a"], acked["b"], acked["claims-b"])
	t.Logf("received (records, numbers all present): team-a backend %v, team-b backend %v, default %v", counts["team-a"], counts["team-b"], counts["default"])
}

// startAppIn runs application Deployment app-<run> in ns, sending numbered
// records "app <run> <n>" as plain OTLP/HTTP to url at rate records/s. env
// adds NAME=value variables (IDENTITY other than none makes every record name
// the pod POD_NAMESPACE/POD_NAME).
func startAppIn(t *testing.T, ns, run, url string, rate int, env ...string) *load {
	t.Helper()
	vars := map[string]string{"IDENTITY": "none"}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	var extra strings.Builder
	for k, v := range vars {
		fmt.Fprintf(&extra, "\n        - {name: %s, value: %q}", k, v)
	}
	mustKubectl(t, toolDeployment("app-"+run, ns, "load", fmt.Sprintf(`
        env:
        - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
        - {name: URL, value: "%s"}
        - {name: RUN, value: "%s"}
        - {name: PREFIX, value: app}
        - {name: RATE, value: "%d"}
        - {name: BATCH, value: "10"}
        - {name: WORKERS, value: "1"}%s
        ports: [{containerPort: 2020}]
        readinessProbe: {tcpSocket: {port: 2020}, periodSeconds: 2}`, url, run, rate, extra.String())), "apply", "--server-side", "-f", "-")
	t.Cleanup(func() { _, _ = kubectl(t, "", "-n", ns, "delete", "deployment", "app-"+run, "--wait=false") })
	return &load{run: run, ip: podIP(t, ns, "app=app-"+run)}
}
