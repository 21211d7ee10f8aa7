// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/checkout"
	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/ocilayout"
)

// releaseRegistry is the registry name a release is published under. The node's
// containerd reaches it at the test's registry through its hosts.toml, as a node
// reaches a mirror: the name is never resolved.
const releaseRegistry = "registry.otelcol-relay.test"

// release is one release makeRelease made and pushed: its tag, the repository
// its install files name, its image index's digest, and its dist/ directory.
type release struct{ tag, repo, digest, dist string }

// ref is the image as the release's install files name it.
func (rel release) ref() string { return rel.repo + "@" + rel.digest }

// publishRelease makes a release as docs/releasing.md does (makeRelease, on a
// tag of a throwaway copy of the checkout) and pushes it to the CNCF reference
// registry (HTTPS, a CA of the test's), which the node's containerd trusts
// through its registry host configuration: a pod naming the image pulls it,
// nothing is imported with ctr. It returns the image's repository and the
// release's digest. The registry stops when the test ends; a pod restarted later
// finds the image already pulled.
func publishRelease(t *testing.T) (string, string) {
	t.Helper()
	r := checkout.Copy(t)
	tag := r.TagRelease()
	reg := e2e.StartRegistry(t)
	rel := makeRelease(t, r, tag, reg)
	registryHosts(t, releaseRegistry, reg)
	return rel.repo, rel.digest
}

// makeRelease runs `make release` for tag in r, for the node's platform, with the
// image named releaseRegistry/otelcol-relay, and pushes its OCI layout to reg
// under the tag with skopeo, digests preserved (the procedure's publish step).
func makeRelease(t *testing.T, r *checkout.Repo, tag string, reg *e2e.Registry) release {
	t.Helper()
	rel := release{tag: tag, repo: releaseRegistry + "/otelcol-relay", dist: filepath.Join(r.Dir, "dist", tag)}
	start := time.Now()
	r.Must("make", "-s", "release", "VERSION="+tag, "IMAGE_REPO="+rel.repo, "PLATFORMS=linux/"+runtime.GOARCH)
	layout := filepath.Join(rel.dist, "image")
	rel.digest = layoutDigest(t, layout)
	pushLayout(t, layout, tag, reg)
	t.Logf("release %s: %s, made and pushed to the registry at %s in %s", tag, rel.ref(), reg.Host, time.Since(start).Round(time.Second))
	return rel
}

// pushLayout copies the OCI layout at dir to reg's otelcol-relay:tag, every
// platform and digest as they are.
func pushLayout(t *testing.T, dir, tag string, reg *e2e.Registry) {
	t.Helper()
	out, err := exec.Command("skopeo", "copy", "--all", "--preserve-digests", "--dest-cert-dir", reg.CertDir,
		"oci:"+dir+":"+tag, "docker://"+reg.Host+"/otelcol-relay:"+tag).CombinedOutput()
	if err != nil {
		t.Fatalf("skopeo copy %s to the registry: %v\n%s", dir, err, out)
	}
}

// runsRelease checks that every relay and agent pod runs ref, pulled by its digest.
func runsRelease(t *testing.T, ref string) {
	t.Helper()
	for _, component := range []string{"gateway", "agent"} {
		images := mustKubectl(t, "", "-n", relayNS, "get", "pods", "-l", "app.kubernetes.io/component="+component, "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.spec.containers[0].image} {.status.containerStatuses[0].imageID}{"\n"}{end}`)
		n := 0
		for _, l := range strings.Split(strings.TrimSpace(images), "\n") {
			// imageID is the reference containerd pulled, by digest.
			if f := strings.Fields(l); len(f) != 3 || f[1] != ref || f[2] != ref {
				t.Errorf("%s pod %q does not run %s pulled by that digest", component, l, ref)
			}
			n++
		}
		t.Logf("%d %s pods run %s", n, component, ref)
	}
}

// registryHosts writes the node containerd's hosts.toml for registry name: pull
// and resolve at reg, trusting reg's CA. containerd reads it at each pull; the
// test's cleanup removes it.
func registryHosts(t *testing.T, name string, reg *e2e.Registry) {
	t.Helper()
	dir := filepath.Join(clusterDir(t), "etc", "certs.d", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	writeFile(t, filepath.Join(dir, "hosts.toml"), fmt.Appendf(nil, `server = "https://%[1]s"

[host."https://%[1]s"]
  capabilities = ["pull", "resolve"]
  ca = %[2]q
`, reg.Host, filepath.Join(reg.CertDir, "ca.crt")))
}

// clusterDir is hack/cluster.sh's CLUSTER_DIR: its kubeconfig is pki/admin.kubeconfig there.
func clusterDir(t *testing.T) string {
	t.Helper()
	if kubeconfig == "" {
		t.Fatal("no cluster kubeconfig")
	}
	return filepath.Dir(filepath.Dir(kubeconfig))
}

// layoutDigest is the digest of the one image index in the OCI layout at dir.
func layoutDigest(t *testing.T, dir string) string {
	t.Helper()
	top, err := ocilayout.Top(dir)
	if err != nil {
		t.Fatal(err)
	}
	return top.Digest
}
