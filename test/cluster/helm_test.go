// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// The Helm install's namespaces: the release's, where its fluent-bit stand-ins run,
// the application whose logs they read, and the backend it sends to. None is the
// shared install's.
const (
	helmRelease   = "helm" // its objects are named helm-otelcol-relay...
	helmNS        = "otelcol-relay-helm"
	helmSenderNS  = "otelcol-relay-helm-logging"
	helmAppNS     = "otelcol-relay-helm-apps"
	helmBackendNS = "otelcol-relay-backend-helm"
	helmRelay     = helmRelease + "-otelcol-relay"
	helmLines     = 1000
)

// TestHelmChartLifecycle installs deploy/helm/otelcol-relay as a platform team
// does with helm: the chart packaged and pushed to an OCI registry (the suite's
// reference registry), installed from that oci:// reference as release "helm" in
// a namespace of its own, with the default backend over mutual TLS and the
// Secrets the test created, beside the shared kustomize install and touching
// nothing of it. Then:
//   - logs from a fluent-bit stand-in reach the test's backend, each line once,
//     with the resource k8s_attributes gives it (the release's prefixed
//     ClusterRole at work);
//   - `helm upgrade` under a numbered load moves the default backend's client
//     certificate to a new Secret and the relays from 2 to 3: the pods roll, the
//     backend sees the new certificate and no longer the old, and every
//     acknowledged record reaches it;
//   - an upgrade with a value of the wrong type, and one with an unknown key, is
//     refused by values.schema.json, naming the key: no new revision, the
//     StatefulSet untouched;
//   - `helm uninstall` removes every object of the chart, cluster-scoped ones
//     included, and leaves the relays' queue volumes (retained by design), which
//     the test then deletes.
func TestHelmChartLifecycle(t *testing.T) {
	needCluster(t)
	helmHome := t.TempDir()
	run := func(args ...string) (string, error) { return helmLogged(t, helmHome, args...) }
	mustRun := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, clusterTrouble(t))
		}
		return out
	}

	// Everything the test makes goes at the end, also after a failure: the
	// release (with its ClusterRoles and ClusterRoleBindings), anything
	// cluster-scoped it may have left, and the namespaces with what is in them
	// (the queue volumes included).
	t.Cleanup(func() {
		removeRelease(t, helmHome, helmRelease, helmNS, nil)
		_, _ = kubectl(t, "", "delete", "namespace", helmNS, helmSenderNS, helmAppNS, helmBackendNS, "--ignore-not-found", "--wait=false")
	})

	// The material: a cluster CA (the relay's serving certificate, the agents' and
	// fluent-bit's client certificates) and the backend's CA (its serving
	// certificate, the relay's client certificates towards it).
	p := newPKI(t)
	t.Cleanup(func() { _ = os.RemoveAll(p.dir) })
	startBackendIn(t, p, helmBackendNS)
	for _, ns := range []string{helmNS, helmSenderNS} {
		applyTestNamespace(t, ns)
	}
	svc := helmRelay + "." + helmNS
	gw := p.ca.Peer(t, testcerts.Options{CommonName: svc + ".svc",
		DNSNames: []string{helmRelay, svc, svc + ".svc", svc + ".svc.cluster.local"}})
	agent := p.ca.Client(t, testcerts.Options{CommonName: "otelcol-relay-agent"})
	fluentBit := p.ca.Client(t, testcerts.Options{CommonName: "fluent-bit"})
	clients := []*testcerts.KeyPair{
		p.backendCA.Client(t, testcerts.Options{CommonName: "otelcol-relay"}),
		p.backendCA.Client(t, testcerts.Options{CommonName: "otelcol-relay"}),
	}
	caPEM := string(p.ca.CertPEM)
	applyObjects(t,
		configMap(helmNS, "otelcol-relay-ca", map[string]string{"ca.crt": caPEM}),
		tlsSecret(helmNS, "helm-relay-receiver-tls", gw),
		tlsSecret(helmNS, "otelcol-relay-agent-tls", agent),
		configMap(helmNS, "otelcol-relay-backend-default", map[string]string{
			"endpoint": "https://backend." + helmBackendNS + ".svc:4318",
			"ca.crt":   string(p.backendCA.CertPEM),
		}),
		secret(helmNS, "otelcol-relay-backend-default-auth", "Opaque", map[string]string{"authorization": "Bearer helm-test-token"}),
		tlsSecret(helmNS, "helm-backend-client-1", clients[0]),
		configMap(helmSenderNS, "otelcol-relay-ca", map[string]string{"ca.crt": caPEM}),
		tlsSecret(helmSenderNS, "otelcol-relay-fluent-bit-tls", fluentBit),
	)

	// 1. The chart, packaged and pushed to the registry, installed from there.
	reg := e2e.StartRegistry(t)
	caFile := filepath.Join(reg.CertDir, "ca.crt")
	pkgDir := t.TempDir()
	mustRun("package", manifest.Chart(), "-d", pkgDir)
	tgz, _ := filepath.Glob(filepath.Join(pkgDir, "otelcol-relay-*.tgz"))
	if len(tgz) != 1 {
		t.Fatalf("helm package wrote %v, want one otelcol-relay-<version>.tgz", tgz)
	}
	version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(tgz[0]), "otelcol-relay-"), ".tgz")
	pushed := digestIn(t, "helm push", mustRun("push", tgz[0], "oci://"+reg.Host+"/charts", "--ca-file", caFile))
	chart := "oci://" + reg.Host + "/charts/otelcol-relay"
	values := func(clientSecret string, replicas int) map[string]any {
		return map[string]any{
			"image": map[string]any{"repository": imageName(t), "tag": imageTag(t)},
			"relay": map[string]any{
				"autoscaling": map[string]any{"enabled": false},
				"replicas":    replicas,
				// The node's 2 CPUs, as test/cluster/overlays/aks scales the relay's request.
				"resources": map[string]any{"requests": map[string]any{"cpu": "100m"}},
			},
			"defaultBackend": map[string]any{"mtls": map[string]any{"enabled": true, "tlsSecret": clientSecret}},
			"receiverTLS":    map[string]any{"secretName": "helm-relay-receiver-tls"},
			"networkPolicy":  map[string]any{"fluentBit": map[string]any{"namespace": helmSenderNS}},
		}
	}
	release := func(verb string, vals ...map[string]any) (string, error) {
		t.Helper()
		args := []string{verb, helmRelease, chart, "--version", version, "--ca-file", caFile, "-n", helmNS,
			"--wait", "--timeout", readyBudget.String()}
		for _, v := range vals {
			args = append(args, "-f", manifest.WriteValues(t, v))
		}
		return run(args...)
	}
	mustRelease := func(verb string, vals ...map[string]any) string {
		t.Helper()
		out, err := release(verb, vals...)
		if err != nil {
			t.Fatalf("helm %s from %s: %v\n%s%s", verb, chart, err, out, clusterTrouble(t))
		}
		return out
	}
	start := time.Now()
	installed := mustRelease("install", values("helm-backend-client-1", 2))
	if pulled := digestIn(t, "helm install", installed); pulled != pushed {
		t.Errorf("helm install pulled %s, helm push pushed %s", pulled, pushed)
	}
	before := waitRelaysIn(t, helmNS, 2)
	t.Logf("installed %s --version %s (%s) and Ready in %s", chart, version, pushed, time.Since(start).Round(time.Second))
	for _, sa := range []string{helmRelay, helmRelay + "-agent"} {
		if out, err := kubectl(t, "", "auth", "can-i", "watch", "pods", "--all-namespaces", "--as=system:serviceaccount:"+helmNS+":"+sa); err != nil || strings.TrimSpace(out) != "yes" {
			t.Errorf("ServiceAccount %s/%s may not watch pods (%q, %v)", helmNS, sa, strings.TrimSpace(out), err)
		}
	}

	// 2. Logs end to end, from a fluent-bit stand-in to the release's Service.
	backendIP := podIP(t, helmBackendNS, "app=backend")
	logsEndToEnd(t, helmAppNS, helmSenderNS, backendIP, helmLines, "RELAY_HOST="+svc+".svc")

	// 3. helm upgrade under a numbered load: a new client certificate in a new
	// Secret, and a third relay.
	l := startLoadIn(t, helmSenderNS, "app.kubernetes.io/name: fluent-bit", "helm", 1000, 2, "RELAY_HOST="+svc+".svc")
	eventually(t, "the backend has 2000 numbers of the load", readyBudget, func() string {
		var sc seqCount
		if err := getJSON(fmt.Sprintf("http://%s:8080/seq?run=%s&upto=2000", backendIP, l.run), &sc); err != nil {
			return err.Error()
		}
		if sc.Distinct < 2000 {
			return fmt.Sprintf("%+v", sc)
		}
		return ""
	})
	applyObjects(t, tlsSecret(helmNS, "helm-backend-client-2", clients[1]))
	start = time.Now()
	mustRelease("upgrade", values("helm-backend-client-2", 3))
	upgraded := time.Now()
	after := waitRelaysIn(t, helmNS, 3)
	t.Logf("helm upgrade (client certificate Secret, 2 to 3 relays) rolled out in %s", upgraded.Sub(start).Round(time.Second))
	for name, pod := range before {
		if after[name].uid == pod.uid {
			t.Errorf("relay pod %s was not replaced by the upgrade", name)
		}
	}
	var seen map[string]time.Time
	if err := getJSON("http://"+backendIP+":8080/clients", &seen); err != nil {
		t.Fatal(err)
	}
	oldAt, oldOK := seen[clients[0].Serial()]
	if !oldOK {
		t.Errorf("the backend never saw the first client certificate %s", clients[0].Serial())
	} else if oldAt.After(upgraded) {
		t.Errorf("the backend saw the first client certificate at %s, after the upgrade ended (%s)", oldAt, upgraded)
	}
	eventually(t, "the backend sees the new client certificate", readyBudget, func() string {
		if err := getJSON("http://"+backendIP+":8080/clients", &seen); err != nil {
			return err.Error()
		}
		if at, ok := seen[clients[1].Serial()]; !ok || at.Before(start) {
			return fmt.Sprintf("serials seen: %v", seen)
		}
		return ""
	})
	eventually(t, "each of the 3 relays accepts the load's records", readyBudget, func() string {
		for name, pod := range relayPodsIn(t, helmNS) {
			if v, err := selfMetric(pod.ip, "otelcol_receiver_accepted_log_records"); err != nil || v == 0 {
				return fmt.Sprintf("%s: %v accepted (%v)", name, v, err)
			}
		}
		return ""
	})
	st, sc := l.finish(t, backendIP)
	t.Logf("helm upgrade under load: sent %d, acked %d, received %d, missing %d, duplicated %d",
		st.Assigned, st.Acked, sc.Distinct, sc.Missing, sc.Duplicates)
	if sc.Missing != 0 {
		t.Errorf("%d acknowledged records never reached the backend (first: %v)", sc.Missing, sc.FirstMissing)
	}
	queuesEmptyIn(t, helmNS)

	// 4. Values the schema refuses: nothing is applied.
	generation := stsGeneration(t)
	revisions := helmRevisions(t, mustRun("history", helmRelease, "-n", helmNS, "-o", "json"))
	for _, bad := range []struct {
		value map[string]any
		want  []string // in helm's error
	}{
		{map[string]any{"relay": map[string]any{"replicas": "three"}}, []string{"/relay/replicas", "want integer"}},
		{map[string]any{"relay": map[string]any{"replica": 3}}, []string{"/relay", "additional properties 'replica' not allowed"}},
	} {
		out, err := release("upgrade", values("helm-backend-client-2", 3), bad.value)
		t.Logf("helm upgrade with %v: %v\n%s", bad.value, err, schemaError(out))
		if err == nil {
			t.Errorf("helm upgrade with %v succeeded", bad.value)
		}
		for _, w := range bad.want {
			if !strings.Contains(out, w) {
				t.Errorf("helm upgrade with %v: no %q in its output:\n%s", bad.value, w, out)
			}
		}
	}
	if now := helmRevisions(t, mustRun("history", helmRelease, "-n", helmNS, "-o", "json")); !slices.Equal(now, revisions) {
		t.Errorf("helm history after the refused upgrades: %v, before: %v", now, revisions)
	}
	if now := stsGeneration(t); now != generation {
		t.Errorf("StatefulSet %s: generation %s after the refused upgrades, %s before", helmRelay, now, generation)
	}

	// 5. helm uninstall: every object goes but the queue volumes.
	mustRun("uninstall", helmRelease, "-n", helmNS, "--wait", "--timeout", readyBudget.String())
	eventually(t, "the release's pods gone", readyBudget, func() string {
		out, err := kubectl(t, "", "-n", helmNS, "get", "pods", "-l", "app.kubernetes.io/name=otelcol-relay", "-o", "name")
		if err != nil {
			return err.Error()
		}
		if out = strings.TrimSpace(out); out != "" {
			return out
		}
		return ""
	})
	var left strings.Builder
	left.WriteString(mustKubectl(t, "", "get", "-n", helmNS, "--ignore-not-found", "-o", "name",
		"statefulset,daemonset,deployment,service,configmap,secret,serviceaccount,networkpolicy,poddisruptionbudget,horizontalpodautoscaler,role,rolebinding",
		"-l", "app.kubernetes.io/instance="+helmRelease))
	left.WriteString(mustKubectl(t, "", "get", "--ignore-not-found", "-o", "name", "clusterrole,clusterrolebinding,priorityclass",
		"-l", "app.kubernetes.io/instance="+helmRelease))
	for _, name := range []string{helmRelay, helmRelay + "-agent"} {
		left.WriteString(mustKubectl(t, "", "get", "--ignore-not-found", "-o", "name", "clusterrole/"+name, "clusterrolebinding/"+name))
	}
	if strings.TrimSpace(left.String()) != "" {
		t.Errorf("after helm uninstall, objects of the release remain:\n%s", left.String())
	}
	pvcs := mustKubectl(t, "", "-n", helmNS, "get", "pvc", "-o",
		`jsonpath={range .items[*]}{.metadata.name}={.status.phase}={.spec.volumeName}{"\n"}{end}`)
	var kept, volumes []string
	for _, l := range strings.Split(strings.TrimSpace(pvcs), "\n") {
		if f := strings.Split(l, "="); len(f) == 3 {
			kept = append(kept, f[0]+"="+f[1])
			volumes = append(volumes, f[2])
		}
	}
	want := []string{"queue-" + helmRelay + "-0=Bound", "queue-" + helmRelay + "-1=Bound", "queue-" + helmRelay + "-2=Bound"}
	if !slices.Equal(kept, want) {
		t.Errorf("after helm uninstall, PVCs %v, want %v (kept by design)", kept, want)
	}
	t.Logf("helm uninstall left the queue volumes %v", kept)
	if len(volumes) > 0 {
		names := make([]string, 0, len(kept))
		for _, k := range kept {
			names = append(names, strings.Split(k, "=")[0])
		}
		mustKubectl(t, "", append([]string{"-n", helmNS, "delete", "pvc", "--timeout=2m"}, names...)...)
		eventually(t, "the queue volumes deleted", readyBudget, func() string {
			out, err := kubectl(t, "", append([]string{"get", "pv", "--ignore-not-found", "-o", "name"}, volumes...)...)
			if err != nil {
				return err.Error()
			}
			return strings.TrimSpace(out)
		})
	}
}

// helmLogged runs helm as runHelm does and logs how long the command took.
func helmLogged(t *testing.T, home string, args ...string) (string, error) {
	t.Helper()
	start := time.Now()
	out, err := runHelm(t, home, args...)
	t.Logf("helm %s (%s): %v", args[0], time.Since(start).Round(100*time.Millisecond), err)
	return out, err
}

// removeRelease uninstalls release from namespace, if it is there, and deletes
// what cluster-scoped objects of it are left: those with its labels, and byName
// (what kustomize made carries no helm label until helm takes it over).
func removeRelease(t *testing.T, home, release, namespace string, byName []string) {
	t.Helper()
	if out, err := runHelm(t, home, "uninstall", release, "-n", namespace, "--ignore-not-found", "--wait", "--timeout", readyBudget.String()); err != nil {
		t.Errorf("helm uninstall: %v\n%s", err, out)
	}
	if out, err := kubectl(t, "", "delete", "clusterrole,clusterrolebinding,priorityclass", "--ignore-not-found",
		"-l", "app.kubernetes.io/managed-by=Helm,app.kubernetes.io/instance="+release); err != nil {
		t.Errorf("removing the release's cluster-scoped objects: %v\n%s", err, out)
	}
	if len(byName) == 0 {
		return
	}
	if out, err := kubectl(t, "", append([]string{"delete", "--ignore-not-found"}, byName...)...); err != nil {
		t.Errorf("removing the install's cluster-scoped objects: %v\n%s", err, out)
	}
}

// runHelm runs helm against the cluster, its configuration, cache and data in
// home (nothing under the host's $HOME), and returns its combined output.
func runHelm(t *testing.T, home string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyBudget+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, manifest.Helm(t), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig,
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

var helmDigest = regexp.MustCompile(`(?m)^Digest: (sha256:[0-9a-f]{64})$`)

// digestIn is the chart digest helm push or pull printed.
func digestIn(t *testing.T, what, out string) string {
	t.Helper()
	m := helmDigest.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%s printed no digest:\n%s", what, out)
	}
	return m[1]
}

// schemaError is helm's error in out, without the lines it logs before it.
func schemaError(out string) string {
	if i := strings.Index(out, "Error:"); i >= 0 {
		return out[i:]
	}
	return out
}

// helmRevisions is each revision and status of `helm history -o json`.
func helmRevisions(t *testing.T, out string) []string {
	t.Helper()
	var h []struct {
		Revision int    `json:"revision"`
		Status   string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("helm history: %v\n%s", err, out)
	}
	var revs []string
	for _, r := range h {
		revs = append(revs, fmt.Sprintf("%d:%s", r.Revision, r.Status))
	}
	return revs
}

func stsGeneration(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(mustKubectl(t, "", "-n", helmNS, "get", "statefulset", helmRelay, "-o", "jsonpath={.metadata.generation}"))
}

// applyObjects applies the objects (JSON documents) in one kubectl call: created,
// or replaced as a user's `kubectl create --dry-run=client -o yaml | kubectl
// apply` does.
func applyObjects(t *testing.T, objects ...string) {
	t.Helper()
	mustKubectl(t, strings.Join(objects, "\n---\n"), "apply", "--server-side", "--force-conflicts", "-f", "-")
}

func configMap(ns, name string, data map[string]string) string {
	return object("ConfigMap", ns, name, map[string]any{"data": data})
}

func secret(ns, name, typ string, data map[string]string) string {
	return object("Secret", ns, name, map[string]any{"type": typ, "stringData": data})
}

func tlsSecret(ns, name string, kp *testcerts.KeyPair) string {
	return secret(ns, name, "kubernetes.io/tls", map[string]string{"tls.crt": string(kp.CertPEM), "tls.key": string(kp.KeyPEM)})
}

func object(kind, ns, name string, fields map[string]any) string {
	o := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": ns}}
	for k, v := range fields {
		o[k] = v
	}
	b, _ := json.Marshal(o) // maps of strings always marshal
	return string(b)
}
