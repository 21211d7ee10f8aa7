// SPDX-License-Identifier: Apache-2.0

//go:build image

package image_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/checkout"
	"github.com/otelcol-relay/otelcol-relay/internal/ocilayout"
)

// releaseRepo is the registry name the test releases under: any name works, the
// files must name it and no other.
const releaseRepo = "registry.release-test.invalid/otelcol-relay"

// releaseInstalls are the install files a release holds, and whether each runs
// the relay's image (fluent-bit's and cert-manager's do not).
var releaseInstalls = map[string]bool{
	"relay": true, "aks": true, "platform": true, "tigera": true,
	"cert-manager": false, "fluent-bit": false, "platform-fluent-bit": false,
}

// TestRelease runs `make release` on a release tag in a throwaway copy of the
// checkout, as docs/releasing.md's procedure does, twice: both runs write the
// same files, byte for byte, image digest included. dist/vX.Y.Z/ holds the
// image as an OCI layout (one manifest per platform, under the tag), each
// platform's SBOM matching its binary, the install files naming the image by
// that digest and never by tag, RELEASE-NOTES.md with the tag's CHANGELOG
// and UPGRADING sections, and a SHA256SUMS that `sha256sum -c` accepts and that catches a
// changed byte. The layout pushed to the reference registry serves that digest
// (checkReleasePushed). A version whose tag does not exist writes nothing.
func TestRelease(t *testing.T) {
	_, platforms := manifestListEngine(t, "make release needs podman (the multi-platform manifest list)")
	r := checkout.Copy(t)
	version := r.Version()
	tag := r.TagRelease()
	dist := filepath.Join(r.Dir, "dist", tag)
	release := func() map[string]string {
		t.Helper()
		start := time.Now()
		out := r.Must("make", "-s", "release", "VERSION="+tag, "IMAGE_REPO="+releaseRepo)
		t.Logf("make release VERSION=%s (%s):\n%s", tag, time.Since(start).Round(time.Second), out)
		if want := fmt.Sprintf("agree, and the labels of %d image(s)\n", len(platforms)); !strings.Contains(out, want) {
			t.Errorf("make release VERSION=%s: no release-check of the layout (%q)", tag, want)
		}
		return treeSums(t, dist)
	}

	first := release()
	if err := os.Rename(dist, dist+".first"); err != nil {
		t.Fatal(err)
	}
	second := release()
	if !maps.Equal(first, second) {
		for f := range union(first, second) {
			if first[f] != second[f] {
				t.Errorf("dist/%s/%s differs between two releases of one commit: %q, then %q", tag, f, first[f], second[f])
			}
		}
	}

	digest := checkReleaseLayout(t, filepath.Join(dist, "image"), tag, platforms)
	t.Logf("two releases of %s: the same %d files, image %s@%s", tag, len(second), releaseRepo, digest)
	ref := releaseRepo + "@" + digest
	checkReleasePushed(t, filepath.Join(dist, "image"), tag, digest)

	for _, p := range platforms {
		goos, arch, _ := strings.Cut(p, "/")
		checkSBOM(t, filepath.Join(dist, "sbom-"+goos+"-"+arch+".cdx.json"), filepath.Join(r.Dir, "bin", goos+"_"+arch, "otelcol-relay"))
	}

	byTag := regexp.MustCompile(`image: *\S*otelcol-relay:`)
	for name, runsRelay := range releaseInstalls {
		f := "install-" + name + ".yaml"
		b, err := os.ReadFile(filepath.Join(dist, f))
		if err != nil {
			t.Error(err)
			continue
		}
		if n := strings.Count(string(b), "image: "+ref+"\n"); runsRelay && n == 0 {
			t.Errorf("%s: no container runs %s", f, ref)
		}
		if m := byTag.Find(b); m != nil {
			t.Errorf("%s names the relay's image by tag: %q", f, m)
		}
	}

	notes, err := os.ReadFile(filepath.Join(dist, "RELEASE-NOTES.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# otelcol-relay " + tag + "\n", ref,
		versionSection(t, filepath.Join(r.Dir, "CHANGELOG.md"), version),
		versionSection(t, filepath.Join(r.Dir, "UPGRADING.md"), version)} {
		if !strings.Contains(string(notes), want) {
			t.Errorf("RELEASE-NOTES.md lacks %q", want)
		}
	}
	if strings.Contains(string(notes), "{{") {
		t.Errorf("RELEASE-NOTES.md has a template field left: %s", notes)
	}

	// Users check the download with sha256sum -c: all of it, and a changed byte fails.
	if listed := strings.Count(readFile(t, filepath.Join(dist, "SHA256SUMS")), "\n"); listed != len(second)-1 {
		t.Errorf("SHA256SUMS lists %d files, dist/%s holds %d besides it", listed, tag, len(second)-1)
	}
	sumCheck := func() (string, error) {
		cmd := exec.Command("sha256sum", "-c", "SHA256SUMS")
		cmd.Dir = dist
		out, cerr := cmd.CombinedOutput()
		return string(out), cerr
	}
	if out, cerr := sumCheck(); cerr != nil {
		t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", cerr, out)
	}
	flipByte(t, filepath.Join(dist, "install-aks.yaml"))
	if out, cerr := sumCheck(); cerr == nil || !strings.Contains(out, "install-aks.yaml: FAILED") {
		t.Errorf("sha256sum -c SHA256SUMS after a changed byte in install-aks.yaml: err=%v\n%s", cerr, out)
	}

	// A version with no tag: release-check refuses it before anything is written.
	next := checkout.NextPatch(t, version)
	out, err := r.Run("make", "-s", "release", "VERSION="+next, "IMAGE_REPO="+releaseRepo)
	if err == nil {
		t.Fatalf("make release VERSION=%s passed without that tag:\n%s", next, out)
	}
	refusal := regexp.MustCompile(`(?m)^release-check: there is no tag `+regexp.QuoteMeta(next)+`\b.*$`).FindAllString(out, -1)
	if len(refusal) == 0 {
		t.Errorf("make release VERSION=%s without that tag failed, but not in release-check:\n%s", next, out)
	}
	t.Logf("make release VERSION=%s without that tag:\n%s", next, strings.Join(refusal, "\n"))
	if _, serr := os.Stat(filepath.Join(r.Dir, "dist", next)); !os.IsNotExist(serr) {
		t.Errorf("make release VERSION=%s failed but wrote dist/%s (%v)", next, next, serr)
	}
}

// checkReleaseLayout checks the OCI layout at dir: one index tagged tag, with
// one image manifest per platform, every blob it reaches present with its
// digest. It returns the index's digest.
func checkReleaseLayout(t *testing.T, dir, tag string, platforms []string) string {
	t.Helper()
	top, err := ocilayout.Top(dir)
	if err != nil {
		t.Fatal(err)
	}
	if top.Annotations[ocilayout.RefName] != tag || top.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Fatalf("OCI layout %s: index.json is not one image index tagged %s: %+v", dir, tag, top)
	}
	digest := top.Digest
	var list manifestList
	if err := json.Unmarshal(blob(t, dir, digest), &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range list.Manifests {
		got = append(got, m.Platform.OS+"/"+m.Platform.Architecture)
		var mf struct {
			Config struct{ Digest string }   `json:"config"`
			Layers []struct{ Digest string } `json:"layers"`
		}
		if err := json.Unmarshal(blob(t, dir, m.Digest), &mf); err != nil {
			t.Fatal(err)
		}
		blob(t, dir, mf.Config.Digest)
		for _, l := range mf.Layers {
			blob(t, dir, l.Digest)
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(platforms))
	if !slices.Equal(got, want) {
		t.Errorf("OCI layout %s: platforms %v, want %v", dir, got, want)
	}
	return digest
}

// blob is digest's blob from the layout at dir, checked against its digest.
func blob(t *testing.T, dir, digest string) []byte {
	t.Helper()
	b, err := ocilayout.Blob(dir, digest)
	if err != nil {
		t.Fatalf("OCI layout %s: %v", dir, err)
	}
	return b
}

// treeSums is every file under dir, by path from dir, with its SHA-256.
func treeSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	fsys := root.FS()
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, werr error) error {
		if werr != nil || d.IsDir() {
			return werr
		}
		b, rerr := fs.ReadFile(fsys, p)
		if rerr != nil {
			return rerr
		}
		sum := sha256.Sum256(b)
		sums[p] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) == 0 {
		t.Fatalf("%s is empty", dir)
	}
	return sums
}

func union(a, b map[string]string) map[string]bool {
	u := map[string]bool{}
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}

// versionSection is the body of file's "## version" section, trimmed.
func versionSection(t *testing.T, file, version string) string {
	t.Helper()
	_, section, _ := strings.Cut(readFile(t, file), "\n## "+version+"\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if section = strings.TrimSpace(section); section == "" {
		t.Fatalf("%s has no ## %s section", file, version)
	}
	return section
}

func flipByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
