// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// `make release-check` on real tags (docs/releasing.md): in a throwaway copy of
// the repository as it is checked out, with the Makefile's own build and SBOM.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/checkout"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// TestReleaseCheck tags a copy of the checkout v<VERSION>, where VERSION, the image
// tag, the CHANGELOG and deploy/README.md's ?ref= say that version: `make
// release-check` passes. Then it tags a commit that bumps VERSION, the CHANGELOG
// and UPGRADING.md to the next version but forgets the image tag and the ?ref=, and
// checks that tag from the first one's checkout: it fails, naming the image tag,
// the ?ref=, the binary and the SBOM (all of the first version), and not the
// VERSION, CHANGELOG and UPGRADING that agree.
func TestReleaseCheck(t *testing.T) {
	r := checkout.Copy(t)
	version := r.Version()
	tag := r.TagRelease()

	start := time.Now()
	out, err := r.Run("make", "-s", "release-check")
	t.Logf("make release-check on %s (%s):\n%s", tag, time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("make release-check on the agreeing tag %s failed: %v", tag, err)
	}
	if !strings.Contains(out, "release-check "+tag+": tag, VERSION, image tag, CHANGELOG, UPGRADING, deploy/README.md's ?ref=, binary and 1 SBOM(s) agree") {
		t.Errorf("make release-check on %s: no agreement line", tag)
	}

	// The next version: VERSION and CHANGELOG bumped, the image tag forgotten.
	next := checkout.NextPatch(t, version)
	r.Must("git", "checkout", "-q", "-b", "next")
	if werr := os.WriteFile(filepath.Join(r.Dir, "VERSION"), []byte(next[1:]+"\n"), 0o644); werr != nil {
		t.Fatal(werr)
	}
	r.PrependChangelog(next[1:])
	r.PrependSection("UPGRADING.md", next[1:])
	r.Must("git", "commit", "-q", "-am", "release "+next)
	r.Must("git", "tag", "-a", next, "-m", next)
	r.Must("git", "checkout", "-q", tag)

	out, err = r.Run("make", "-s", "release-check", "TAG="+next)
	t.Logf("make release-check TAG=%s on the %s checkout:\n%s", next, tag, out)
	if err == nil {
		t.Fatalf("make release-check TAG=%s passed, but its image tag, binary and SBOM say %s", next, tag)
	}
	for _, want := range []string{
		`release-check ` + next + `: the image tag (newTag) in deploy/components/image/kustomization.yaml at the tag is "` + tag + `", want "` + next + `"`,
		`release-check ` + next + `: ` + filepath.Join(r.Dir, "bin", "otelcol-relay") + ` --version (build it from the tag, clean: make build) is "` + tag + `", want "` + next + `"`,
		`release-check ` + next + `: a remote base's ?ref= or the image's newTag in deploy/README.md at the tag is "` + tag + `", want "` + next + `"`,
		`release-check ` + next + `: the version SBOM ` + filepath.Join(r.Dir, "bin", "otelcol-relay.cdx.json") + ` names (metadata.component.version) is "` + tag + `", want "` + next + `"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("make release-check TAG=%s: output lacks %q", next, want)
		}
	}
	for _, notWant := range []string{"VERSION at the tag", "CHANGELOG.md at the tag", "UPGRADING.md at the tag"} {
		if strings.Contains(out, notWant) {
			t.Errorf("make release-check TAG=%s names %q, which agrees at that tag", next, notWant)
		}
	}
}

// TestRemoteBaseAtTag renders deploy/README.md's remote-base kustomization as a user
// without a checkout does, from a git repository on this machine (a bare clone
// served as a file URL): a copy of the checkout with a release tag, then a commit on
// the branch after it that renames the image. The kustomization resolves at its
// ?ref=, the tag's manifests and not the branch's: the relay and the agent run the
// image its images: entry names, at the tag.
func TestRemoteBaseAtTag(t *testing.T) {
	r := checkout.Copy(t)
	tag := r.TagRelease()
	component := filepath.Join(r.Dir, "deploy", "components", "image", "kustomization.yaml")
	k := readConfig(t, component)
	const unreleased = "localhost/unreleased-otelcol-relay"
	next := strings.Replace(k, "newName: localhost/otelcol-relay", "newName: "+unreleased, 1)
	if next == k {
		t.Fatalf("%s: no newName: localhost/otelcol-relay to change", component)
	}
	if err := os.WriteFile(component, []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Must("git", "commit", "-q", "-am", "after the release: another image name")
	bare := filepath.Join(t.TempDir(), "otelcol-relay.git")
	r.Must("git", "clone", "-q", "--bare", r.Dir, bare)

	const guide, upstream = "deploy/README.md", "https://github.com/otelcol-relay/otelcol-relay"
	block, err := manifest.DocBlock(readDoc(t, guide), "# Installing otelcol-relay on Kubernetes", "as a remote base pinned to a release tag", "yaml")
	if err != nil {
		t.Fatalf("%s: %v", guide, err)
	}
	if !strings.Contains(block, upstream+"//") || !strings.Contains(block, "?ref="+tag) {
		t.Fatalf("%s: the remote-base example does not pin %s//...?ref=%s:\n%s", guide, upstream, tag, block)
	}
	dir := t.TempDir()
	if werr := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(strings.ReplaceAll(block, upstream, "file://"+bare)), 0o644); werr != nil {
		t.Fatal(werr)
	}
	out, err := exec.Command("kubectl", "kustomize", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize of %s's remote base at %s: %v\n%s", guide, tag, err, out)
	}
	want := "registry.example.com/otelcol-relay:" + tag
	var images []string
	for _, l := range strings.Split(string(out), "\n") {
		if img, ok := strings.CutPrefix(strings.TrimSpace(l), "image: "); ok && strings.Contains(img, "otelcol-relay") {
			images = append(images, img)
			if img != want {
				t.Errorf("the remote base at ?ref=%s runs %s, want %s (the tag's image name, with the example's images:)", tag, img, want)
			}
		}
	}
	if len(images) < 2 {
		t.Errorf("the remote base at ?ref=%s renders %d relay images (%v), want the relay's and the agent's", tag, len(images), images)
	}
	t.Logf("%s's remote base, served from a bare repository at %s: %d containers run %s", guide, tag, len(images), want)
}
