// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

const (
	relayNS   = "otelcol-relay"
	backendNS = "otelcol-relay-backend"
	nodeName  = "orcl-node"
	// A bound for a loaded 2-core machine, not a measurement (the test logs those).
	readyBudget = 6 * time.Minute
)

// pki is every certificate an install needs: the cluster CA of the README (it signs
// the relay's serving certificate and the agents' and fluent-bit's client
// certificates), and the backend's own CA (its serving certificate and the relay's
// client certificate towards it).
type pki struct {
	dir       string // ca.crt gw.* agent.* client.* backend-ca.crt backend.* fluent-bit.*
	ca        *testcerts.CA
	backendCA *testcerts.CA // the rotation test issues new certificates from both
}

// The shared install: made by the first test that needs it and kept for the next,
// since an install takes minutes. A test that replaces it (TestPlatformOverlay) says
// so, and the next install(t) puts it back; every test works in any order.
var (
	installPKI     *pki   // outlives every test: the install's certificates
	installOverlay string // the kustomization install applies
	installState   string // "": none yet; "aks": it runs; "replaced": another install took its namespaces
	installErr     string // why an install failed: the tests after it fail at once
)

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// repoRel is the repository path elem as a kustomization in dir names it.
func repoRel(t *testing.T, dir string, elem ...string) string {
	t.Helper()
	rel, err := filepath.Rel(dir, filepath.Join(append([]string{repoRoot}, elem...)...))
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

func newPKI(t *testing.T) *pki {
	// Outlives the first test: every test of the package uses these files.
	dir, err := os.MkdirTemp("", "otelcol-relay-cluster-pki-") //nolint:usetesting // outlives this test: later tests of the package use it
	if err != nil {
		t.Fatal(err)
	}
	// Valid for months, as a platform's material is: one that expires within a week
	// is a fault, which OtelcolRelayCertificateExpiringSoon reports to the
	// Prometheus of TestScaleInBackendDown.
	now := time.Now()
	valid := now.Add(90 * 24 * time.Hour)
	ca := testcerts.NewCAWithValidity(t, "otelcol-relay-cluster-test-ca", now.Add(-time.Hour), valid)
	backendCA := testcerts.NewCAWithValidity(t, "otelcol-relay-cluster-test-backend-ca", now.Add(-time.Hour), valid)
	writeFile(t, filepath.Join(dir, "ca.crt"), ca.CertPEM)
	writeFile(t, filepath.Join(dir, "backend-ca.crt"), backendCA.CertPEM)
	pair := func(name string, kp *testcerts.KeyPair) {
		writeFile(t, filepath.Join(dir, name+".crt"), kp.CertPEM)
		writeFile(t, filepath.Join(dir, name+".key"), kp.KeyPEM)
	}
	pair("gw", ca.Peer(t, relayServing(valid)))
	pair("agent", ca.Client(t, testcerts.Options{CommonName: "otelcol-relay-agent", NotAfter: valid}))
	pair("fluent-bit", ca.Client(t, testcerts.Options{CommonName: "fluent-bit", NotAfter: valid}))
	pair("client", backendCA.Client(t, testcerts.Options{CommonName: "otelcol-relay", NotAfter: valid}))
	// One serving certificate for the backend in any namespace it runs in.
	bsvc := "backend." + backendNS
	var names []string
	for _, ns := range []string{backendNS, secondBackendNS, federationBackendNS, teamABackendNS, teamBBackendNS, helmBackendNS, takeoverBackendNS} {
		names = append(names, "backend."+ns, "backend."+ns+".svc", "backend."+ns+".svc.cluster.local")
	}
	pair("backend", backendCA.Server(t, testcerts.Options{CommonName: bsvc + ".svc", NotAfter: valid,
		DNSNames: names, IPs: []net.IP{net.ParseIP("127.0.0.1")}}))
	return &pki{dir: dir, ca: ca, backendCA: backendCA}
}

// relayServing is the relays' serving certificate, until notAfter: every name of
// the Service otelcol-relay in the install's namespace.
func relayServing(notAfter time.Time) testcerts.Options {
	svc := "otelcol-relay." + relayNS
	return testcerts.Options{CommonName: svc + ".svc", NotAfter: notAfter,
		DNSNames: []string{"otelcol-relay", svc, svc + ".svc", svc + ".svc.cluster.local"}}
}

// readmeBlock is the first ```sh block after marker in deploy/README.md's section
// heading.
func readmeBlock(t *testing.T, heading, marker string) string {
	t.Helper()
	return docBlock(t, "deploy/README.md", heading, marker)
}

// docBlock is the first ```sh block after marker in doc's section heading.
func docBlock(t *testing.T, doc, heading, marker string) string {
	t.Helper()
	return docFence(t, doc, heading, marker, "sh")
}

// docFence is the first ```lang block after marker in doc's section heading
// (manifest.DocBlock).
func docFence(t *testing.T, doc, heading, marker, lang string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(doc)))
	if err != nil {
		t.Fatal(err)
	}
	block, err := manifest.DocBlock(string(b), heading, marker, lang)
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return block
}

// backendURL is where the test's backend listens; the README's example endpoint is
// replaced by it, as a user replaces it by theirs.
const backendURL = "https://backend." + backendNS + ".svc:4318"

// install makes the aks install what runs, as deploy/README.md says: the backend it
// sends to, the README's Secrets and ConfigMaps with the README's own commands, then
// `kubectl apply --server-side -k`. Once for the package, and again after a test
// replaced it.
func install(t *testing.T) *pki {
	t.Helper()
	needCluster(t)
	if installErr != "" {
		t.Fatal(installErr)
	}
	if installState == "aks" {
		return installPKI
	}
	ok := false
	defer func() {
		if !ok {
			installErr = "the aks install failed (see the first test that failed)"
		}
	}()
	prepareInstall(t)
	mustKubectl(t, "", "apply", "--server-side", "-k", installOverlay)
	installState, ok = "aks", true
	return installPKI
}

// prepareInstall makes what an install needs before its apply: once for the
// package the test's PKI, the backend and the aks overlay; then, with whatever
// install runs removed (its namespaces), the Secrets and ConfigMaps deploy/README.md
// has a user create, with the README's own commands.
func prepareInstall(t *testing.T) {
	t.Helper()
	if installPKI == nil {
		installPKI = newPKI(t)
		startBackend(t, installPKI)
		overlay, err := os.MkdirTemp("", "otelcol-relay-cluster-overlay-") //nolint:usetesting // outlives this test: later tests of the package use it
		if err != nil {
			t.Fatal(err)
		}
		installOverlay = overlay
		// The test's backend has a private CA and asks for a client certificate: the
		// README's component for such a default backend.
		writeTestOverlay(t, overlay, []string{"test/cluster/overlays/aks"},
			[]string{"deploy/components/backend-default-mtls"}, nil)
	}
	if installState != "" {
		start := time.Now()
		mustKubectl(t, "", "delete", "namespace", relayNS, loggingNS, "--ignore-not-found", "--timeout=5m")
		t.Logf("the install that ran removed in %s", time.Since(start).Round(time.Second))
	}
	// The README's commands, verbatim but for the example endpoint and the token.
	// The by-hand path: dev-certs.sh makes its own CA, and the test needs the CA's key
	// to sign the backend's side.
	block := readmeBlock(t, "## What you create before applying", "**By hand.**")
	block = strings.ReplaceAll(block, "https://otlp.example.com:4318", backendURL)
	sh(t, installPKI.dir, []string{"TOKEN=cluster-test-token"}, block)
}

// freshInstall is install for a test that judges the install itself: a pod that an
// earlier test force-deleted or rolled may have restarted once, and that is not the
// README's install. Any install that runs already was made for an earlier test
// (install(t) makes one only when none runs), so it reinstalls then.
func freshInstall(t *testing.T) *pki {
	t.Helper()
	if installState == "aks" {
		installState = "replaced"
	}
	return install(t)
}

// restoreInstall applies the install's overlay again, taking back what a test set
// with kubectl (--force-conflicts), as an operator going back to the manifests does,
// and waits for the relays and the agent to roll.
func restoreInstall(t *testing.T) {
	t.Helper()
	if installState != "aks" {
		return
	}
	mustKubectl(t, "", "apply", "--server-side", "--force-conflicts", "-k", installOverlay)
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "statefulset/otelcol-relay", "--timeout=10m")
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "daemonset/otelcol-relay-agent", "--timeout=5m")
}

// relayEnv makes the relays run with these variables (NAME=VALUE), rolling them if
// they do not yet: a test states the settings it needs instead of relying on a test
// that ran before it.
func relayEnv(t *testing.T, vars ...string) {
	t.Helper()
	now := relayEnvNow(t)
	var change []string
	for _, v := range vars {
		name, value, _ := strings.Cut(v, "=")
		if now[name] != value {
			change = append(change, v)
		}
	}
	if len(change) == 0 {
		return
	}
	mustKubectl(t, "", append([]string{"-n", relayNS, "set", "env", "statefulset/otelcol-relay", "-c", "otelcol-relay"}, change...)...)
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "statefulset/otelcol-relay", "--timeout=10m")
}

// relayEnvNow is the relay container's literal env of the StatefulSet's template.
func relayEnvNow(t *testing.T) map[string]string {
	t.Helper()
	out := mustKubectl(t, "", "-n", relayNS, "get", "statefulset", "otelcol-relay", "-o",
		`jsonpath={range .spec.template.spec.containers[?(@.name=="otelcol-relay")].env[*]}{.name}={.value}{"\n"}{end}`)
	env := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if name, value, ok := strings.Cut(l, "="); ok {
			env[name] = value
		}
	}
	return env
}

// writeTestOverlay writes dir/kustomization.yaml: the kustomizations resources and
// the components (repository paths) as a user combines them, with the image `make
// image` built and imported into the node (deploy/README.md: point kustomize at your
// build), and, for the test node's 2 CPUs, the CPU request of each StatefulSet named
// in smallCPU scaled down to 100m: the only change a test makes to the manifests.
func writeTestOverlay(t *testing.T, dir string, resources, components, smallCPU []string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for _, r := range resources {
		fmt.Fprintf(&b, "  - %s\n", repoRel(t, dir, strings.Split(r, "/")...))
	}
	if len(components) > 0 {
		b.WriteString("components:\n")
		for _, c := range components {
			fmt.Fprintf(&b, "  - %s\n", repoRel(t, dir, strings.Split(c, "/")...))
		}
	}
	if len(smallCPU) > 0 {
		b.WriteString("patches:\n")
		for _, name := range smallCPU {
			fmt.Fprintf(&b, `  - target: {kind: StatefulSet, name: %s}
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/resources/requests/cpu
        value: 100m
`, name)
		}
	}
	fmt.Fprintf(&b, "images:\n  - name: localhost/otelcol-relay\n    newName: %s\n    newTag: %s\n", imageName(t), imageTag(t))
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), []byte(b.String()))
}

func imageName(t *testing.T) string {
	t.Helper()
	if relayImage == "" {
		t.Fatal("hack/cluster.sh recorded no relay image")
	}
	return relayImage[:strings.LastIndex(relayImage, ":")]
}

func imageTag(_ *testing.T) string {
	return relayImage[strings.LastIndex(relayImage, ":")+1:]
}

// exampleAPIKey is the X-API-Key the backend's gRPC side (the example backend of
// deploy/overlays/example-backend) requires.
const exampleAPIKey = "cluster-test-example-key"

// startBackend runs the OTLP backend over mutual TLS in its own namespace: HTTP for
// the default backend, gRPC for the example one.
func startBackend(t *testing.T, p *pki) { startBackendIn(t, p, backendNS) }

// startBackendIn runs the backend in namespace ns, as Service backend.<ns>.
func startBackendIn(t *testing.T, p *pki, ns string) {
	t.Helper()
	applyTestNamespace(t, ns)
	mustKubectl(t, "", "-n", ns, "create", "secret", "generic", "backend-tls",
		"--from-file=tls.crt="+filepath.Join(p.dir, "backend.crt"),
		"--from-file=tls.key="+filepath.Join(p.dir, "backend.key"),
		"--from-file=ca.crt="+filepath.Join(p.dir, "backend-ca.crt"))
	mustKubectl(t, toolDeployment("backend", ns, "backend", `
        env: [{name: API_KEY, value: `+exampleAPIKey+`}]
        ports: [{containerPort: 4318}, {containerPort: 4317}, {containerPort: 8080}]
        readinessProbe: {tcpSocket: {port: 4318}, periodSeconds: 2}
        volumeMounts: [{name: tls, mountPath: /tls, readOnly: true}]
      volumes: [{name: tls, secret: {secretName: backend-tls}}]`)+`
---
apiVersion: v1
kind: Service
metadata: {name: backend, namespace: `+ns+`}
spec:
  selector: {app: backend}
  ports: [{name: otlp-http, port: 4318}, {name: otlp-grpc, port: 4317}, {name: status, port: 8080}]
`, "apply", "--server-side", "-f", "-")
}

// toolDeployment is a Deployment NAME (label app=NAME) in ns running clustertool
// ROLE, with rest appended to its container (and pod) spec.
func toolDeployment(name, ns, role, rest string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
      - name: %[1]s
        image: localhost/otelcol-relay-test/clustertool:1.0
        imagePullPolicy: Never
        args: [%[3]s]%[4]s
`, name, ns, role, rest)
}

// podIP of the one Ready pod matching selector in ns.
func podIP(t *testing.T, ns, selector string) string {
	t.Helper()
	var ip string
	eventually(t, "pod "+selector+" in "+ns+" Ready", readyBudget, func() string {
		out, err := kubectl(t, "", "-n", ns, "get", "pods", "-l", selector, "-o",
			`jsonpath={range .items[*]}{.status.podIP} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		if err != nil {
			return err.Error()
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[1] == "True" {
				ip = f[0]
				return ""
			}
		}
		return "not Ready: " + out
	})
	return ip
}

type podList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Status struct {
			Phase      string `json:"phase"`
			Conditions []struct {
				Type               string    `json:"type"`
				Status             string    `json:"status"`
				LastTransitionTime time.Time `json:"lastTransitionTime"`
			} `json:"conditions"`
			StartTime         time.Time `json:"startTime"`
			ContainerStatuses []struct {
				Name         string `json:"name"`
				RestartCount int    `json:"restartCount"`
				State        map[string]json.RawMessage
			} `json:"containerStatuses"`
		} `json:"status"`
	} `json:"items"`
}

func getPods(t *testing.T, ns string) podList {
	t.Helper()
	var pl podList
	if err := json.Unmarshal([]byte(mustKubectl(t, "", "-n", ns, "get", "pods", "-o", "json")), &pl); err != nil {
		t.Fatal(err)
	}
	return pl
}

// TestInstallAsReadme applies deploy/overlays/aks as deploy/README.md says (the
// README's own commands for what a user creates first) and checks what a user
// checks: every pod Ready with no restart, every PVC Bound, the HPA reading a real
// CPU utilization from metrics-server.
func TestInstallAsReadme(t *testing.T) {
	freshInstall(t)
	want := map[string]bool{"otelcol-relay-0": true, "otelcol-relay-1": true}
	agent := regexp.MustCompile(`^otelcol-relay-agent-[a-z0-9]{5}$`)
	eventually(t, "every pod of "+relayNS+" Ready", readyBudget, func() string {
		pl := getPods(t, relayNS)
		seen, agents := map[string]bool{}, 0
		for _, p := range pl.Items {
			ready := false
			for _, c := range p.Status.Conditions {
				ready = ready || (c.Type == "Ready" && c.Status == "True")
			}
			if !ready {
				return fmt.Sprintf("pod %s is %s, not Ready", p.Metadata.Name, p.Status.Phase)
			}
			seen[p.Metadata.Name] = true
			if agent.MatchString(p.Metadata.Name) {
				agents++
			}
		}
		for n := range want {
			if !seen[n] {
				return "no pod " + n
			}
		}
		if agents != 1 {
			return fmt.Sprintf("%d agent pods, want 1 (one node)", agents)
		}
		return ""
	})
	for _, p := range getPods(t, relayNS).Items {
		for _, c := range p.Status.Conditions {
			if c.Type == "Ready" {
				t.Logf("pod %s Ready %s after its start", p.Metadata.Name, c.LastTransitionTime.Sub(p.Status.StartTime))
			}
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount != 0 {
				out, _ := kubectl(t, "", "-n", relayNS, "logs", "--previous", p.Metadata.Name, "-c", c.Name)
				t.Errorf("pod %s container %s restarted %d times; its last run:\n%s", p.Metadata.Name, c.Name, c.RestartCount, tail(out, 30))
			}
		}
	}
	pvcs := mustKubectl(t, "", "-n", relayNS, "get", "pvc", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.phase}{"\n"}{end}`)
	for _, n := range []string{"queue-otelcol-relay-0", "queue-otelcol-relay-1"} {
		if !strings.Contains(pvcs, n+"=Bound\n") {
			t.Errorf("PVC %s not Bound: %q", n, pvcs)
		}
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "bin", "metrics-server")); err != nil {
		t.Fatalf("bin/metrics-server is not built (hack/kube-peers.sh cluster): the HPA has no CPU to read")
	}
	eventually(t, "the HPA reads the relays' CPU", readyBudget, func() string {
		out, err := kubectl(t, "", "-n", relayNS, "get", "hpa", "otelcol-relay", "-o",
			`jsonpath={.status.currentMetrics[?(@.type=="Resource")].resource.current.averageUtilization}`)
		if err != nil {
			return err.Error()
		}
		if strings.TrimSpace(out) == "" {
			st, _ := kubectl(t, "", "-n", relayNS, "describe", "hpa", "otelcol-relay")
			return "no CPU utilization yet: " + tail(st, 8)
		}
		t.Logf("HPA: CPU utilization %s%%", out)
		return ""
	})
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
