// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// The take-over's namespaces: the install's (kustomize's, then the release's), the
// application whose records go through it, and the backend it sends to. None is
// the shared install's or TestHelmChartLifecycle's.
const (
	takeoverPrefix    = "moved" // kustomize's namePrefix "moved-", then the release's name
	takeoverNS        = "otelcol-relay-moved"
	takeoverAppNS     = "otelcol-relay-moved-apps"
	takeoverBackendNS = "otelcol-relay-backend-moved"
	takeoverRelay     = takeoverPrefix + "-otelcol-relay"
	takeoverRecords   = 300
)

// TestHelmTakesOverKustomizeInstall moves a running kustomize install to helm as
// deploy/docs/helm.md ("From kustomize to helm") says, with the section's own helm
// command. The install is a user's: their kustomization with `namespace:` and
// `namePrefix: moved-` over the suite's overlay (test/cluster/overlays/aks with the
// default backend's mutual TLS, the image `make image` built), applied with
// `kubectl apply --server-side -k`, relays Ready. Then the chart, as release
// "moved" (prefix "moved-") with the values of that overlay, installed over it
// with the doc's flags. The claim, checked:
//   - helm installs; the StatefulSet is the same object (its UID), and so is each
//     queue volume's PVC (UID and PV): the relays keep their queues;
//   - the relays and the agent rolled once (new pod UIDs), Ready, on the chart's
//     configuration ConfigMaps;
//   - every object of the kustomize install but the Namespace and its generated
//     ConfigMaps is in the release, under the same kind and name, and carries the
//     release's meta.helm.sh annotations (the ClusterRoles and bindings included);
//   - the kustomize ConfigMaps moved-otelcol-relay-config-<hash> and
//     moved-otelcol-relay-agent-config-<hash> stay behind, outside the release;
//   - an application's records through the taken-over agent and relays reach the
//     backend, each with the pod identity k8s_attributes gives it;
//   - `helm uninstall` removes what it took over, cluster-scoped objects
//     included, and leaves the queue volumes and the kustomize ConfigMaps.
func TestHelmTakesOverKustomizeInstall(t *testing.T) {
	needCluster(t)
	helmHome := t.TempDir()
	run := func(args ...string) (string, error) { return helmLogged(t, helmHome, args...) }
	// kustomize's ClusterRoles and bindings carry no helm label until helm takes
	// them over: by name as well as by label.
	clusterScoped := []string{
		"clusterrole/" + takeoverRelay, "clusterrole/" + takeoverRelay + "-agent",
		"clusterrolebinding/" + takeoverRelay, "clusterrolebinding/" + takeoverRelay + "-agent",
	}
	t.Cleanup(func() {
		removeRelease(t, helmHome, takeoverPrefix, takeoverNS, clusterScoped)
		_, _ = kubectl(t, "", "-n", takeoverNS, "delete", "pvc", "--all", "--ignore-not-found", "--wait=false")
		_, _ = kubectl(t, "", "delete", "namespace", takeoverNS, takeoverAppNS, takeoverBackendNS, "--ignore-not-found", "--wait=false")
	})

	// What the user creates before applying: the default backend's endpoint, CA,
	// Authorization header and client certificate, the receivers' serving
	// certificate (for moved-otelcol-relay's names) and CA bundle, the agents'
	// client certificate. Unprefixed: kustomize renames only what it renders.
	p := newPKI(t)
	t.Cleanup(func() { _ = os.RemoveAll(p.dir) })
	startBackendIn(t, p, takeoverBackendNS)
	applyTestNamespace(t, takeoverNS)
	svc := takeoverRelay + "." + takeoverNS
	applyObjects(t,
		configMap(takeoverNS, "otelcol-relay-ca", map[string]string{"ca.crt": string(p.ca.CertPEM)}),
		tlsSecret(takeoverNS, "otelcol-relay-receiver-tls", p.ca.Peer(t, testcerts.Options{CommonName: svc + ".svc",
			DNSNames: []string{takeoverRelay, svc, svc + ".svc", svc + ".svc.cluster.local"}})),
		tlsSecret(takeoverNS, "otelcol-relay-agent-tls", p.ca.Client(t, testcerts.Options{CommonName: "otelcol-relay-agent"})),
		configMap(takeoverNS, "otelcol-relay-backend-default", map[string]string{
			"endpoint": "https://backend." + takeoverBackendNS + ".svc:4318",
			"ca.crt":   string(p.backendCA.CertPEM),
		}),
		secret(takeoverNS, "otelcol-relay-backend-default-auth", "Opaque", map[string]string{"authorization": "Bearer moved-test-token"}),
		tlsSecret(takeoverNS, "otelcol-relay-backend-default-tls", p.backendCA.Client(t, testcerts.Options{CommonName: "otelcol-relay"})),
	)

	// 1. The kustomize install: the suite's overlay, moved by the user's
	// kustomization to a namespace and a prefix.
	overlay := t.TempDir()
	writeTestOverlay(t, overlay, []string{"test/cluster/overlays/aks"}, []string{"deploy/components/backend-default-mtls"}, nil)
	user := manifest.MovedTo(t, overlay, takeoverNS, takeoverPrefix+"-")
	start := time.Now()
	mustKubectl(t, "", "apply", "--server-side", "-k", user)
	// Applying the kustomization's Namespace (the same field manager, kubectl)
	// dropped the label applyTestNamespace gave: put back, for hack/cluster.sh's
	// clean-up of a killed run.
	mustKubectl(t, "", "label", "--overwrite", "namespace", takeoverNS, "otelcol-relay-cluster-test=true")
	before := waitRelaysIn(t, takeoverNS, 2)
	mustKubectl(t, "", "-n", takeoverNS, "rollout", "status", "daemonset/"+takeoverRelay+"-agent", "--timeout=5m")
	t.Logf("kustomize install Ready in %s", time.Since(start).Round(time.Second))
	stsUID := objectUID(t, "statefulset/"+takeoverRelay)
	volumes := queueVolumes(t)
	if want := []string{"queue-" + takeoverRelay + "-0", "queue-" + takeoverRelay + "-1"}; !slices.Equal(slices.Sorted(maps.Keys(volumes)), want) {
		t.Fatalf("the kustomize install's PVCs: %v, want %v", volumes, want)
	}
	agentsBefore := agentPodUIDs(t)
	generated := []string{configVolume(t, "statefulset/"+takeoverRelay), configVolume(t, "daemonset/"+takeoverRelay+"-agent")}
	for i, re := range []string{`^moved-otelcol-relay-config-[a-z0-9]{10}$`, `^moved-otelcol-relay-agent-config-[a-z0-9]{10}$`} {
		if !regexp.MustCompile(re).MatchString(generated[i]) {
			t.Fatalf("the kustomize install's configuration ConfigMap %q is not kustomize's generated name %s", generated[i], re)
		}
	}

	// 2. helm install over it, with the doc's command: this chart folder for the
	// doc's oci:// reference (TestHelmChartLifecycle installs from a registry),
	// release "moved", the values of the overlay.
	values := manifest.WriteValues(t, map[string]any{
		"image": map[string]any{"repository": imageName(t), "tag": imageTag(t)},
		// test/cluster/overlays/aks: the relay's CPU request for the test node.
		"relay":          map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}},
		"defaultBackend": map[string]any{"mtls": map[string]any{"enabled": true}},
		"agent":          map[string]any{"kubeletInsecureSkipVerify": true},
	})
	args := docHelmInstall(t, takeoverPrefix, manifest.Chart(), takeoverNS, values)
	t.Logf("deploy/docs/helm.md's command, for this install: helm %s", strings.Join(args, " "))
	start = time.Now()
	out, err := run(append(args, "--timeout", readyBudget.String())...)
	if err != nil {
		t.Fatalf("helm install --take-ownership over the kustomize install: %v\n%s%s", err, out, clusterTrouble(t))
	}
	after := waitRelaysIn(t, takeoverNS, 2)
	mustKubectl(t, "", "-n", takeoverNS, "rollout", "status", "daemonset/"+takeoverRelay+"-agent", "--timeout=5m")
	t.Logf("helm took the install over and it is Ready in %s", time.Since(start).Round(time.Second))

	// 3. The same StatefulSet and queue volumes; new pods, on the chart's ConfigMaps.
	if now := objectUID(t, "statefulset/"+takeoverRelay); now != stsUID {
		t.Errorf("StatefulSet %s: UID %s after the take-over, %s before: it was replaced", takeoverRelay, now, stsUID)
	}
	if now := queueVolumes(t); !maps.Equal(now, volumes) {
		t.Errorf("the queue volumes (PVC uid=PV) after the take-over: %v, before: %v", now, volumes)
	}
	for name, pod := range before {
		if after[name].uid == pod.uid {
			t.Errorf("relay pod %s was not replaced by the take-over", name)
		}
	}
	agentsAfter := agentPodUIDs(t)
	if len(agentsAfter) != 1 || len(agentsBefore) != 1 || agentsAfter[0] == agentsBefore[0] {
		t.Errorf("agent pods %v after the take-over, %v before: want one, replaced", agentsAfter, agentsBefore)
	}
	manifestOut, err := run("get", "manifest", takeoverPrefix, "-n", takeoverNS)
	if err != nil {
		t.Fatalf("helm get manifest: %v\n%s", err, manifestOut)
	}
	release := objectRefs(t, manifestOut)
	now := []string{configVolume(t, "statefulset/"+takeoverRelay), configVolume(t, "daemonset/"+takeoverRelay+"-agent")}
	for i, name := range now {
		if name == generated[i] || !release["configmap/"+name] {
			t.Errorf("after the take-over the pods mount ConfigMap %s (before: %s), want the release's", name, generated[i])
		}
	}

	// Every object of the kustomize install is the release's now, the same kind
	// and name, but the Namespace (the chart renders none) and the generated
	// ConfigMaps; the release adds only its own ConfigMaps.
	installed := objectRefs(t, mustKubectl(t, "", "kustomize", user))
	for ref := range installed {
		switch {
		case ref == "namespace/"+takeoverNS, ref == "configmap/"+generated[0], ref == "configmap/"+generated[1]:
			if release[ref] {
				t.Errorf("%s is in the release", ref)
			}
		case !release[ref]:
			t.Errorf("%s of the kustomize install is not in the release", ref)
		}
	}
	for ref := range release {
		if !installed[ref] && ref != "configmap/"+now[0] && ref != "configmap/"+now[1] {
			t.Errorf("the release has %s, which the kustomize install did not", ref)
		}
	}
	var list struct {
		Items []struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name        string            `json:"name"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		} `json:"items"`
	}
	refs := slices.Sorted(maps.Keys(release))
	if err := json.Unmarshal([]byte(mustKubectl(t, "", append([]string{"-n", takeoverNS, "get", "-o", "json"}, refs...)...)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(refs) {
		t.Errorf("kubectl get of the release's %d objects returned %d", len(refs), len(list.Items))
	}
	for _, o := range list.Items {
		a, l := o.Metadata.Annotations, o.Metadata.Labels
		if a["meta.helm.sh/release-name"] != takeoverPrefix || a["meta.helm.sh/release-namespace"] != takeoverNS || l["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("%s %s: release-name %q, release-namespace %q, managed-by %q; want %s, %s, Helm",
				o.Kind, o.Metadata.Name, a["meta.helm.sh/release-name"], a["meta.helm.sh/release-namespace"], l["app.kubernetes.io/managed-by"], takeoverPrefix, takeoverNS)
		}
	}
	mustKubectl(t, "", append([]string{"-n", takeoverNS, "get", "configmap", "-o", "name"}, generated...)...)
	t.Logf("the release holds %d objects of the kustomize install; %v stay behind, outside it", len(refs)-2, generated)

	// Records through the taken-over agent and relays.
	backendIP := podIP(t, takeoverBackendNS, "app=backend")
	applyTestNamespace(t, takeoverAppNS)
	app := startAppIn(t, takeoverAppNS, "moved", "http://"+takeoverRelay+"-agent."+takeoverNS+".svc:4318/v1/logs", 100)
	waitAppAtBackend(t, app, backendIP, takeoverRecords)
	recs := appRecords(t, app, backendIP)
	pod := appPod(t, takeoverAppNS, "moved")
	requirePodIdentity(t, "after the take-over", recs, pod, takeoverAppNS)
	t.Logf("after the take-over: %d records at the backend, each with k8s.pod.name=%s", len(recs), pod)

	// 4. helm uninstall: what it took over goes, cluster-scoped objects included;
	// the queue volumes and the kustomize ConfigMaps stay.
	if out, err := run("uninstall", takeoverPrefix, "-n", takeoverNS, "--wait", "--timeout", readyBudget.String()); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	if left := strings.TrimSpace(mustKubectl(t, "", append([]string{"-n", takeoverNS, "get", "--ignore-not-found", "-o", "name"}, refs...)...)); left != "" {
		t.Errorf("after helm uninstall, objects of the release remain:\n%s", left)
	}
	if now := queueVolumes(t); !maps.Equal(now, volumes) {
		t.Errorf("the queue volumes after helm uninstall: %v, before: %v", now, volumes)
	}
	mustKubectl(t, "", append([]string{"-n", takeoverNS, "get", "configmap", "-o", "name"}, generated...)...)
}

// docHelmInstall is the helm command of deploy/docs/helm.md's "From kustomize to
// helm" for this install: its flags as the doc has them, the release, chart,
// namespace and values file given, no --version (a chart folder has one).
func docHelmInstall(t *testing.T, release, chart, namespace, values string) []string {
	t.Helper()
	block := docBlock(t, "deploy/docs/helm.md", "## From kustomize to helm", "")
	f := strings.Fields(strings.ReplaceAll(block, "\\\n", " "))
	if len(f) < 4 || f[0] != "helm" || f[1] != "install" || strings.HasPrefix(f[2], "-") || strings.HasPrefix(f[3], "-") {
		t.Fatalf("deploy/docs/helm.md, From kustomize to helm: not `helm install RELEASE CHART ...`:\n%s", block)
	}
	args := []string{"install", release, chart}
	for i := 4; i < len(f); i++ {
		switch f[i] {
		case "--version":
			i++
		case "-n", "--namespace":
			args, i = append(args, "-n", namespace), i+1
		case "-f", "--values":
			args, i = append(args, "-f", values), i+1
		default:
			if !strings.HasPrefix(f[i], "--") || strings.Contains(f[i], "=") {
				t.Fatalf("deploy/docs/helm.md, From kustomize to helm: %q: the test knows only boolean --flags besides --version, -n and -f", f[i])
			}
			args = append(args, f[i])
		}
	}
	return args
}

// objectUID is the UID of kind/name in the take-over's namespace.
func objectUID(t *testing.T, ref string) string {
	t.Helper()
	return strings.TrimSpace(mustKubectl(t, "", "-n", takeoverNS, "get", ref, "-o", "jsonpath={.metadata.uid}"))
}

// queueVolumes is each PVC of the take-over's namespace: its UID and its PV.
func queueVolumes(t *testing.T) map[string]string {
	t.Helper()
	out := mustKubectl(t, "", "-n", takeoverNS, "get", "pvc", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.metadata.uid}={.spec.volumeName}{"\n"}{end}`)
	v := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, rest, ok := strings.Cut(l, " "); ok {
			v[name] = rest
		}
	}
	return v
}

// agentPodUIDs is the UID of each agent pod of the take-over's namespace that is
// not being deleted.
func agentPodUIDs(t *testing.T) []string {
	t.Helper()
	out := mustKubectl(t, "", "-n", takeoverNS, "get", "pods", "-l", "app.kubernetes.io/component=agent", "-o",
		`jsonpath={range .items[*]}{.metadata.uid} {.metadata.deletionTimestamp}{"\n"}{end}`)
	var uids []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) == 1 {
			uids = append(uids, f[0])
		}
	}
	return uids
}

// configVolume is the ConfigMap the pod template of kind/name mounts as volume
// config.
func configVolume(t *testing.T, ref string) string {
	t.Helper()
	return strings.TrimSpace(mustKubectl(t, "", "-n", takeoverNS, "get", ref, "-o",
		`jsonpath={.spec.template.spec.volumes[?(@.name=="config")].configMap.name}`))
}

// objectRefs is each object of a YAML stream as kubectl names it:
// kind[.group]/name, the kind in lower case.
func objectRefs(t *testing.T, stream string) map[string]bool {
	t.Helper()
	refs := map[string]bool{}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(stream, -1) {
		var o struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if o.Kind == "" {
			continue
		}
		kind := strings.ToLower(o.Kind)
		if group, _, ok := strings.Cut(o.APIVersion, "/"); ok {
			kind += "." + group
		}
		refs[kind+"/"+o.Metadata.Name] = true
	}
	return refs
}
