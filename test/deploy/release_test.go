// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// `make release-check` on real tags (docs/releasing.md): in a throwaway copy of
// the repository as it is checked out, with the Makefile's own build and SBOM.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// TestReleaseCheck tags a copy of the checkout v<VERSION>, where VERSION, the image
// tag and the CHANGELOG say that version: `make release-check` passes. Then it tags
// a commit that bumps VERSION and the CHANGELOG to the next version but forgets
// the image tag, and checks that tag from the first one's checkout: it fails, naming
// the image tag, the binary and the SBOM (all of the first version), and not the
// VERSION and CHANGELOG that agree.
func TestReleaseCheck(t *testing.T) {
	dir := copyCheckout(t)
	run := func(name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		// TAG from the environment would override the Makefile's default.
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "TAG=") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		cmd.Env = append(cmd.Env, "GIT_AUTHOR_NAME=release-test", "GIT_AUTHOR_EMAIL=release-test@localhost",
			"GIT_COMMITTER_NAME=release-test", "GIT_COMMITTER_EMAIL=release-test@localhost")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(name string, args ...string) string {
		t.Helper()
		out, err := run(name, args...)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return out
	}
	raw, err := os.ReadFile(filepath.Join(dir, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(raw))
	tag := "v" + version
	// The copy is a release of the checkout's VERSION: image tag and CHANGELOG say so.
	setImageTag(t, dir, tag)
	changelog := filepath.Join(dir, "CHANGELOG.md")
	if !strings.Contains(readConfig(t, changelog), "\n## "+version+"\n") {
		prepend(t, changelog, version)
	}
	must("git", "init", "-q")
	must("git", "add", "-A")
	must("git", "commit", "-q", "-m", "release "+tag)
	must("git", "tag", "-a", tag, "-m", tag)

	start := time.Now()
	out, err := run("make", "-s", "release-check")
	t.Logf("make release-check on %s (%s):\n%s", tag, time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("make release-check on the agreeing tag %s failed: %v", tag, err)
	}
	if !strings.Contains(out, "release-check "+tag+": tag, VERSION, image tag, CHANGELOG, binary and 1 SBOM(s) agree") {
		t.Errorf("make release-check on %s: no agreement line", tag)
	}

	// The next version: VERSION and CHANGELOG bumped, the image tag forgotten.
	next := nextPatch(t, version)
	must("git", "checkout", "-q", "-b", "next")
	if werr := os.WriteFile(filepath.Join(dir, "VERSION"), []byte(next[1:]+"\n"), 0o644); werr != nil {
		t.Fatal(werr)
	}
	prepend(t, changelog, next[1:])
	must("git", "commit", "-q", "-am", "release "+next)
	must("git", "tag", "-a", next, "-m", next)
	must("git", "checkout", "-q", tag)

	out, err = run("make", "-s", "release-check", "TAG="+next)
	t.Logf("make release-check TAG=%s on the %s checkout:\n%s", next, tag, out)
	if err == nil {
		t.Fatalf("make release-check TAG=%s passed, but its image tag, binary and SBOM say %s", next, tag)
	}
	for _, want := range []string{
		`release-check ` + next + `: the image tag (newTag) in deploy/components/image/kustomization.yaml at the tag is "` + tag + `", want "` + next + `"`,
		`release-check ` + next + `: ` + filepath.Join(dir, "bin", "otelcol-relay") + ` --version (build it from the tag, clean: make build) is "` + tag + `", want "` + next + `"`,
		`release-check ` + next + `: the version SBOM ` + filepath.Join(dir, "bin", "otelcol-relay.cdx.json") + ` names (metadata.component.version) is "` + tag + `", want "` + next + `"`,
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

// nextPatch is the tag of the patch release after version X.Y.Z.
func nextPatch(t *testing.T, version string) string {
	t.Helper()
	i := strings.LastIndex(version, ".")
	n, err := strconv.Atoi(version[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("VERSION %q is not X.Y.Z", version)
	}
	return "v" + version[:i+1] + strconv.Itoa(n+1)
}

// copyCheckout copies the files git knows in the checkout (committed or not,
// ignored ones left out, symlinks kept) into a fresh directory without history.
func copyCheckout(t *testing.T) string {
	t.Helper()
	root := e2e.RepoRoot()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dir := t.TempDir()
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src, dst := filepath.Join(root, f), filepath.Join(dir, f)
		fi, err := os.Lstat(src)
		if os.IsNotExist(err) {
			continue // deleted in the checkout, not yet committed
		} else if err != nil {
			t.Fatal(err)
		}
		if merr := os.MkdirAll(filepath.Dir(dst), 0o755); merr != nil {
			t.Fatal(merr)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, lerr := os.Readlink(src)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if serr := os.Symlink(target, dst); serr != nil {
				t.Fatal(serr)
			}
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// setImageTag sets newTag in the copy's image component.
func setImageTag(t *testing.T, dir, tag string) {
	t.Helper()
	p := filepath.Join(dir, "deploy", "components", "image", "kustomization.yaml")
	var lines []string
	for _, l := range strings.Split(readConfig(t, p), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "newTag:") {
			k := strings.Index(l, "newTag:")
			if k < 0 {
				t.Fatalf("%s: line %q has no newTag:", p, l)
			}
			l = l[:k] + "newTag: " + tag
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// prepend puts a `## version` section in front of the changelog's first section.
func prepend(t *testing.T, changelog, version string) {
	t.Helper()
	s := readConfig(t, changelog)
	i := strings.Index(s, "\n## ")
	if i < 0 {
		t.Fatalf("%s has no section", changelog)
	}
	s = s[:i+1] + "## " + version + "\n\n- Release " + version + ".\n" + s[i:]
	if err := os.WriteFile(changelog, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
