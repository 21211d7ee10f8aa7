// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/checkout"
	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/ocilayout"
)

// releaseChange is the annotation the second release adds to the relay's pod
// template: its change of manifest, which the upgraded pods must carry.
const releaseChange = "otelcol-relay.io/release-test"

// TestUpgradeBetweenReleases installs a release and upgrades to the next as a
// platform team does (docs/releasing.md):
//   - two releases made from one tree, the second after a change to the relay's
//     manifest, each pushed to the reference registry and signed there with
//     `make sign` (cosign, a throwaway key pair);
//   - the procedure's verify-then-apply steps, run as written, stop at `cosign
//     verify` for an image changed by one byte and pushed under the release's tag;
//   - the first release installed from its install file (a kustomization that
//     lists the downloaded file, as the page shows, with the default backend's
//     mutual TLS at the tag, plus the node's one CPU change) carries logs end to
//     end, its image pulled by digest by containerd;
//   - then, with a numbered load acknowledged and the backend down, the second is
//     applied the same way: every relay and agent pod is replaced and runs it,
//     each relay reads the queue its predecessor left on the volume, and once
//     the backend is back every acknowledged record reaches it.
//
// It replaces the aks install; the next test that needs it installs it again.
func TestUpgradeBetweenReleases(t *testing.T) {
	needCluster(t)
	cosign := os.Getenv("COSIGN_BIN")
	if cosign == "" {
		t.Fatal("COSIGN_BIN is unset: build cosign with hack/tools.sh cosign (make cluster does)")
	}

	r := checkout.Copy(t)
	reg := e2e.StartRegistry(t)
	first := makeRelease(t, r, r.TagRelease(), reg)
	second := makeRelease(t, r, r.NextRelease(func(dir string) {
		p := filepath.Join(dir, "deploy", "base", "statefulset.yaml")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		const at = "  template:\n    metadata:\n"
		if !strings.Contains(string(b), at) {
			t.Fatalf("%s: no pod template metadata to annotate", p)
		}
		writeFile(t, p, []byte(strings.Replace(string(b), at, at+"      annotations:\n        "+releaseChange+": changed\n", 1)))
	}), reg)
	registryHosts(t, releaseRegistry, reg)

	// The maintainers' step 6 for both, with a key pair of the test's.
	keys := t.TempDir()
	password := make([]byte, 16)
	if _, err := rand.Read(password); err != nil {
		t.Fatal(err)
	}
	// cosign trusts the registry's CA through SSL_CERT_FILE. TUF_MIRROR, a mirror
	// with no root.json in TUF_ROOT, keeps it from fetching Sigstore's public
	// trusted root from the internet on verify (it warns and goes on: a key pair
	// needs none); tests send to loopback only.
	tufEnv := []string{"TUF_ROOT=" + t.TempDir(), "TUF_MIRROR=http://127.0.0.1:9"}
	signEnv := append([]string{"COSIGN_PASSWORD=" + hex.EncodeToString(password), "SSL_CERT_FILE=" + filepath.Join(reg.CertDir, "ca.crt")}, tufEnv...)
	gen := exec.Command(cosign, "generate-key-pair")
	gen.Dir, gen.Env = keys, append(os.Environ(), signEnv...)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	pushed := reg.Host + "/otelcol-relay"
	for _, rel := range []release{first, second} {
		start := time.Now()
		out := r.Must("env", append(signEnv, "make", "-s", "sign", "VERSION="+rel.tag, "IMAGE_REPO="+pushed, "COSIGN="+cosign,
			"COSIGN_KEY="+filepath.Join(keys, "cosign.key"), "COSIGN_PUB="+filepath.Join(keys, "cosign.pub"))...)
		t.Logf("make sign VERSION=%s (%s): %s", rel.tag, time.Since(start).Round(100*time.Millisecond), lastLine(out))
	}

	// What a user runs: the page's kustomization over the downloaded install file,
	// then its verify-then-apply block, with the public key and the image by
	// digest as RELEASE-NOTES.md names it, in the registry pulled from.
	user := t.TempDir()
	copyFile(t, filepath.Join(keys, "cosign.pub"), filepath.Join(user, "cosign.pub"))
	writeReleaseKustomization(t, r, user, first.tag)
	steps := docBlock(t, "docs/releasing.md", "## For platform teams: installing a release", "verify, then apply")
	stepsEnv := append(os.Environ(), "KUBECONFIG="+kubeconfig, "SSL_CERT_FILE="+filepath.Join(reg.CertDir, "ca.crt"),
		"PATH="+filepath.Dir(cosignOnPath(t, cosign))+":"+filepath.Join(repoRoot, "bin")+":"+os.Getenv("PATH"))
	stepsEnv = append(stepsEnv, tufEnv...)
	verifyThenApply := func(rel release, image string) (string, error) {
		t.Helper()
		copyFile(t, filepath.Join(rel.dist, "install-aks.yaml"), filepath.Join(user, "install-aks.yaml"))
		// Not bash -e: the steps must stop by themselves, as in a user's shell.
		cmd := exec.Command("bash", "-c", steps)
		cmd.Dir = user
		cmd.Env = append(slices.Clip(stepsEnv), "IMAGE="+image)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	tamperedStops(t, second, reg, func(image string) (string, error) { return verifyThenApply(second, image) })

	// The first release, installed.
	installState = "replaced" // from here on, what runs is not the aks install
	prepareInstall(t)
	backendIP := podIP(t, backendNS, "app=backend")
	// The install files as they are, `kubectl apply -f`: the API server takes every
	// object (a server-side dry run; the node's 2 CPUs hold one relay at the
	// shipped request, so the pods run from the kustomization below).
	for _, name := range []string{"relay", "aks"} {
		dry := mustKubectl(t, "", "apply", "--server-side", "--dry-run=server", "-f", filepath.Join(first.dist, "install-"+name+".yaml"))
		n := strings.Count(dry, "serverside-applied")
		t.Logf("kubectl apply --server-side --dry-run=server -f install-%s.yaml: %d objects taken", name, n)
		if n == 0 {
			t.Errorf("kubectl apply --dry-run=server -f install-%s.yaml applied nothing:\n%s", name, dry)
		}
	}
	start := time.Now()
	out, err := verifyThenApply(first, pushed+"@"+first.digest)
	if err != nil {
		t.Fatalf("the install steps for %s: %v\n%s", first.ref(), err, out)
	}
	t.Logf("the install steps for %s@%s:\n%s", pushed, first.digest, out)
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "statefulset/otelcol-relay", "--timeout=10m")
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "daemonset/otelcol-relay-agent", "--timeout=5m")
	waitRelays(t, 2)
	t.Logf("%s installed from install-aks.yaml, verified and Ready in %s", first.tag, time.Since(start).Round(time.Second))
	runsRelease(t, first.ref())

	l := startLoad(t, "releases", 1000, 2)
	eventually(t, "the backend has 5000 records from the first release", readyBudget, func() string {
		var sc seqCount
		if gerr := getJSON(fmt.Sprintf("http://%s:8080/seq?run=%s&upto=%d", backendIP, l.run, 5000), &sc); gerr != nil {
			return gerr.Error()
		}
		if sc.Distinct < 5000 {
			return fmt.Sprintf("%+v", sc)
		}
		return ""
	})

	// The backend goes down; what the relays acknowledge from here waits in their
	// queues, and the load stops so that the upgrade finds them holding it.
	queueWhileBackendDown(t, backendIP, l)

	// Each old relay's drain reaches its timeout with the backend down: 30 s
	// (drainTimeout), which is also the hand-off's default start_after, so no
	// hand-off starts and each keeps its queue on its volume for its successor
	// (TestRollingUpdateBackendDownHandsOff rolls with the hand-off).
	after := rollout(t, first.tag+" to "+second.tag+", backend down", drainGaveUpLog, func() {
		if out, err = verifyThenApply(second, pushed+"@"+second.digest); err != nil {
			t.Fatalf("the install steps for %s: %v\n%s", second.ref(), err, out)
		}
	})
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "daemonset/otelcol-relay-agent", "--timeout=5m")
	for name, p := range after {
		// No intake since the load stopped: what the new pod queues, it read from
		// the volume its predecessor wrote.
		v, err := selfMetric(p.ip, "otelcol_exporter_queue_size")
		t.Logf("%s (%s) starts with %.0f bytes queued (%v)", name, second.tag, v, err)
		if err != nil || v == 0 {
			t.Errorf("%s (%s) has no queue from its volume: %v (%v)", name, second.tag, v, err)
		}
	}
	runsRelease(t, second.ref())
	annotated := mustKubectl(t, "", "-n", relayNS, "get", "pods", "-l", "app.kubernetes.io/component=gateway", "-o",
		`jsonpath={range .items[*]}{.metadata.annotations.otelcol-relay\.io/release-test}{"\n"}{end}`)
	if strings.Count(annotated, "changed\n") != len(after) {
		t.Errorf("the relay pods do not all carry %s's manifest change (%s): %q", second.tag, releaseChange, annotated)
	}

	if err := getJSON("http://"+backendIP+":8080/down?on=false", nil); err != nil {
		t.Fatal(err)
	}
	st, sc := l.finish(t, backendIP)
	if sc.Missing != 0 {
		t.Errorf("%d acknowledged records never reached the backend (first: %v)", sc.Missing, sc.FirstMissing)
	}
	t.Logf("across the upgrade: %d acknowledged, %d received, %d missing, %d duplicates", st.Acked, sc.Distinct, sc.Missing, sc.Duplicates)
	queuesEmpty(t)
}

// tamperedStops pushes rel's image changed by one byte under rel's tag and runs
// the install steps (steps, given the image a user names) for that tag: they must
// stop at cosign's verification, naming no signature, and apply nothing.
func tamperedStops(t *testing.T, rel release, reg *e2e.Registry, steps func(image string) (string, error)) {
	t.Helper()
	changed := filepath.Join(t.TempDir(), "tampered")
	digest, err := ocilayout.Tamper(filepath.Join(rel.dist, "image"), changed)
	if err != nil {
		t.Fatal(err)
	}
	pushLayout(t, changed, rel.tag, reg)
	image := reg.Host + "/otelcol-relay:" + rel.tag
	out, err := steps(image)
	t.Logf("the install steps for %s, an image changed by one byte (%s): %v\n%s", image, digest, err, out)
	if err == nil || !strings.Contains(out, "no signatures found") {
		t.Errorf("the install steps passed, or failed for another reason than the signature, for an image changed by one byte")
	}
	if strings.Contains(out, "serverside-applied") {
		t.Errorf("the install steps applied the install after a failed verification:\n%s", out)
	}
}

// writeReleaseKustomization writes dir/kustomization.yaml: the one of
// docs/releasing.md, its component at tag fetched from a bare clone of r (a
// file URL, as kustomize fetches the repository's), and the test node's change:
// the relay's CPU request scaled down (as test/cluster/overlays/aks does), two
// replicas, and the drain's timeout while the backend is down (drainTimeout).
func writeReleaseKustomization(t *testing.T, r *checkout.Repo, dir, tag string) {
	t.Helper()
	const upstream = "https://github.com/otelcol-relay/otelcol-relay"
	bare := filepath.Join(t.TempDir(), "otelcol-relay.git")
	r.Must("git", "clone", "-q", "--bare", r.Dir, bare)
	k := docFence(t, "docs/releasing.md", "## For platform teams: installing a release", "list the downloaded file", "yaml")
	if !strings.Contains(k, upstream+"//") || !strings.Contains(k, "?ref=vX.Y.Z") {
		t.Fatalf("docs/releasing.md: the install's kustomization names no component of %s at ?ref=vX.Y.Z:\n%s", upstream, k)
	}
	k = strings.NewReplacer(upstream, "file://"+bare, "?ref=vX.Y.Z", "?ref="+tag).Replace(k)
	name, value, _ := strings.Cut(drainTimeout, "=")
	k = strings.TrimRight(k, "\n") + fmt.Sprintf(`
patches:
  - target: {kind: StatefulSet, name: otelcol-relay}
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/resources/requests/cpu
        value: 100m
  - target: {kind: StatefulSet, name: otelcol-relay}
    patch: |-
      apiVersion: apps/v1
      kind: StatefulSet
      metadata: {name: otelcol-relay}
      spec: {template: {spec: {containers: [{name: otelcol-relay, env: [{name: %s, value: %s}]}]}}}
%s`, name, value, twoReplicasPatch)
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), []byte(k))
}

// cosignOnPath is a directory of the test's holding bin as `cosign`, the name
// the page's steps call it by.
func cosignOnPath(t *testing.T, bin string) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), "cosign")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	return link
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dst, b)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}
