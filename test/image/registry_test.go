// SPDX-License-Identifier: Apache-2.0

//go:build image

package image_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
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

// changeOneByte copies the OCI layout at src and changes one byte of its first
// image's config (a label's value), writing the digests above it anew (manifest,
// index, index.json) as a registry would see them: a rebuilt or tampered image
// under the same tag. It returns the copy and its index's digest.
func changeOneByte(t *testing.T, src string) (string, string) {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "changed")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", src, dst, err, out)
	}
	var top map[string]any
	must(t, json.Unmarshal([]byte(readFile(t, filepath.Join(dst, "index.json"))), &top))
	topManifests := top["manifests"].([]any)
	indexDesc := topManifests[0].(map[string]any)
	var index map[string]any
	must(t, json.Unmarshal(blob(t, dst, indexDesc["digest"].(string)), &index))
	imageDesc := index["manifests"].([]any)[0].(map[string]any)
	var manifest map[string]any
	must(t, json.Unmarshal(blob(t, dst, imageDesc["digest"].(string)), &manifest))
	configDesc := manifest["config"].(map[string]any)
	config := string(blob(t, dst, configDesc["digest"].(string)))
	const label = `"org.opencontainers.image.title":"otelcol-relay"`
	if !strings.Contains(config, label) {
		t.Fatalf("image config has no %s to change:\n%s", label, config)
	}
	config = strings.Replace(config, label, `"org.opencontainers.image.title":"otelcol-relaz"`, 1)

	put := func(desc map[string]any, b []byte) {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		writeBytes(t, filepath.Join(dst, "blobs", "sha256", d[len("sha256:"):]), b)
		desc["digest"], desc["size"] = d, len(b)
	}
	put(configDesc, []byte(config))
	put(imageDesc, marshal(t, manifest))
	put(indexDesc, marshal(t, index))
	writeBytes(t, filepath.Join(dst, "index.json"), marshal(t, top))
	return dst, indexDesc["digest"].(string)
}

func skopeo(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("skopeo", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("skopeo %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return b
}

func writeBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	must(t, os.WriteFile(path, b, 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
