// SPDX-License-Identifier: Apache-2.0

//go:build image

package image_test

import (
	"maps"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/ocilayout"
)

// releaseRepoPath is the repository the release is pushed to in the test registry.
const releaseRepoPath = "otelcol-relay"

// checkReleasePushed pushes the release's OCI layout (dist/TAG/image) to the
// reference registry, as docs/releasing.md's publish step does (skopeo copy --all
// --preserve-digests), and checks what a user pulling it gets: the tag and the
// digest both resolve to the release's digest, and a pull by that digest gives
// back every blob of the layout, byte for byte. Then a changed image (one byte of
// one platform's config) is pushed under the same tag: the tag moves to another
// digest, and the release's digest, which every install file names, still serves
// the release.
func checkReleasePushed(t *testing.T, layout, tag, digest string) {
	reg := e2e.StartRegistry(t)
	byTag := reg.Host + "/" + releaseRepoPath + ":" + tag
	byDigest := reg.Host + "/" + releaseRepoPath + "@" + digest
	skopeo(t, "copy", "--all", "--preserve-digests", "--dest-cert-dir", reg.CertDir, "oci:"+layout+":"+tag, "docker://"+byTag)
	for _, ref := range []string{tag, digest} {
		got, err := reg.ManifestDigest(releaseRepoPath, ref)
		if err != nil || got != digest {
			t.Fatalf("registry %s: %s:%s is %q (%v), want the release's %s", reg.Host, releaseRepoPath, ref, got, err, digest)
		}
	}
	pulled := filepath.Join(t.TempDir(), "pulled")
	skopeo(t, "copy", "--all", "--preserve-digests", "--src-cert-dir", reg.CertDir, "docker://"+byDigest, "oci:"+pulled+":"+tag)
	want, got := treeSums(t, filepath.Join(layout, "blobs")), treeSums(t, filepath.Join(pulled, "blobs"))
	if !maps.Equal(want, got) {
		t.Errorf("pulled %s: %d blobs, the release's layout %d, or their content differs", byDigest, len(got), len(want))
	}
	t.Logf("pushed to the reference registry at %s and pulled back by digest: %d blobs, each the release's", reg.Host, len(got))

	changed, changedDigest := changeOneByte(t, layout)
	skopeo(t, "copy", "--all", "--preserve-digests", "--dest-cert-dir", reg.CertDir, "oci:"+changed+":"+tag, "docker://"+byTag)
	if got, err := reg.ManifestDigest(releaseRepoPath, tag); err != nil || got != changedDigest {
		t.Errorf("after pushing a changed image under %s, the tag is %q (%v), want %s", tag, got, err, changedDigest)
	}
	if got, err := reg.ManifestDigest(releaseRepoPath, digest); err != nil || got != digest {
		t.Errorf("after pushing a changed image under %s, the release's digest %s serves %q (%v)", tag, digest, got, err)
	}
	t.Logf("a changed image pushed under %s moved the tag to %s; %s still serves the release", tag, changedDigest, digest)
}

// changeOneByte is ocilayout.Tamper in a directory of the test's: one byte of the
// first image's config changed, the digests above it written anew.
func changeOneByte(t *testing.T, src string) (string, string) {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "changed")
	digest, err := ocilayout.Tamper(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	return dst, digest
}

func skopeo(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("skopeo", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("skopeo %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
