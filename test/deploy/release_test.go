// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// `make release-check` on real tags (docs/releasing.md): in a throwaway copy of
// the repository as it is checked out, with the Makefile's own build and SBOM.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/checkout"
)

// TestReleaseCheck tags a copy of the checkout v<VERSION>, where VERSION, the image
// tag and the CHANGELOG say that version: `make release-check` passes. Then it tags
// a commit that bumps VERSION and the CHANGELOG to the next version but forgets
// the image tag, and checks that tag from the first one's checkout: it fails, naming
// the image tag, the binary and the SBOM (all of the first version), and not the
// VERSION and CHANGELOG that agree.
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
	if !strings.Contains(out, "release-check "+tag+": tag, VERSION, image tag, CHANGELOG, binary and 1 SBOM(s) agree") {
		t.Errorf("make release-check on %s: no agreement line", tag)
	}

	// The next version: VERSION and CHANGELOG bumped, the image tag forgotten.
	next := checkout.NextPatch(t, version)
	r.Must("git", "checkout", "-q", "-b", "next")
	if werr := os.WriteFile(filepath.Join(r.Dir, "VERSION"), []byte(next[1:]+"\n"), 0o644); werr != nil {
		t.Fatal(werr)
	}
	r.PrependChangelog(next[1:])
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
		`release-check ` + next + `: the version SBOM ` + filepath.Join(r.Dir, "bin", "otelcol-relay.cdx.json") + ` names (metadata.component.version) is "` + tag + `", want "` + next + `"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("make release-check TAG=%s: output lacks %q", next, want)
		}
	}
	for _, notWant := range []string{"VERSION at the tag", "CHANGELOG.md at the tag"} {
		if strings.Contains(out, notWant) {
			t.Errorf("make release-check TAG=%s names %q, which agrees at that tag", next, notWant)
		}
	}
}
