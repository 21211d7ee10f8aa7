// SPDX-License-Identifier: Apache-2.0

// Package checkout makes throwaway copies of the repository as it is checked
// out, for the tests that run its release procedure (docs/releasing.md) with the
// Makefile's own targets on a tag of their own, never touching the real history.
package checkout

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// Repo is a copy of the checkout in a directory of the test's.
type Repo struct {
	t   tb.T
	Dir string
}

// Copy copies the files git knows in the checkout (committed or not, ignored
// ones left out, symlinks kept) into a fresh directory without history.
func Copy(t tb.T) *Repo {
	t.Helper()
	root := e2e.RepoRoot()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dir := t.TempDir()
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if err := copyFile(filepath.Join(root, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	return &Repo{t: t, Dir: dir}
}

func copyFile(src, dst string) error {
	fi, err := os.Lstat(src)
	if os.IsNotExist(err) {
		return nil // deleted in the checkout, not yet committed
	} else if err != nil {
		return err
	}
	if merr := os.MkdirAll(filepath.Dir(dst), 0o755); merr != nil {
		return merr
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, lerr := os.Readlink(src)
		if lerr != nil {
			return lerr
		}
		return os.Symlink(target, dst)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, fi.Mode().Perm())
}

// Run runs name in the copy with the caller's environment but TAG (which would
// override the Makefile's default) and with a git identity of its own.
func (r *Repo) Run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = r.Dir
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

// Must is Run, failing the test on an error.
func (r *Repo) Must(name string, args ...string) string {
	r.t.Helper()
	out, err := r.Run(name, args...)
	if err != nil {
		r.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// Version is the copy's VERSION (X.Y.Z).
func (r *Repo) Version() string {
	r.t.Helper()
	return strings.TrimSpace(r.read("VERSION"))
}

// TagRelease makes the copy a repository whose one commit is the release of its
// VERSION, as step 1 of the procedure prepares it (the image tag and sections of
// CHANGELOG.md and UPGRADING.md say that version), tagged vVERSION; it returns the tag.
func (r *Repo) TagRelease() string {
	r.t.Helper()
	version := r.Version()
	tag := "v" + version
	r.SetImageTag(tag)
	if !strings.Contains(r.read("CHANGELOG.md"), "\n## "+version+"\n") {
		r.PrependChangelog(version)
	}
	if !strings.Contains(r.read("UPGRADING.md"), "\n## "+version+"\n") {
		r.PrependSection("UPGRADING.md", version)
	}
	r.Must("git", "init", "-q")
	r.Must("git", "add", "-A")
	r.Must("git", "commit", "-q", "-m", "release "+tag)
	r.Must("git", "tag", "-a", tag, "-m", tag)
	return tag
}

// NextRelease tags the patch release after the copy's VERSION on a new commit, as
// step 1 of the procedure prepares a release on a tree that moved on: change (the
// release's own change, given the copy's directory) first, then VERSION, the image
// tag, the chart's version and appVersion, deploy/README.md's `?ref=` and `newTag:`,
// and a section of CHANGELOG.md and UPGRADING.md for it. TagRelease must have made the copy a repository. It returns
// the new tag.
func (r *Repo) NextRelease(change func(dir string)) string {
	r.t.Helper()
	old := "v" + r.Version()
	tag := NextPatch(r.t, r.Version())
	change(r.Dir)
	r.write("VERSION", tag[1:]+"\n")
	r.SetImageTag(tag)
	r.SetChartVersion(tag)
	const guide = "deploy/README.md"
	pins := strings.NewReplacer("?ref="+old, "?ref="+tag, "newTag: "+old, "newTag: "+tag)
	r.write(guide, pins.Replace(r.read(guide)))
	r.PrependSection("CHANGELOG.md", tag[1:])
	r.PrependSection("UPGRADING.md", tag[1:])
	r.Must("git", "add", "-A")
	r.Must("git", "commit", "-q", "-m", "release "+tag)
	r.Must("git", "tag", "-a", tag, "-m", tag)
	return tag
}

// SetImageTag sets newTag in the copy's image component.
func (r *Repo) SetImageTag(tag string) {
	r.t.Helper()
	r.rewriteLines("deploy/components/image/kustomization.yaml", func(l string) string {
		if strings.HasPrefix(strings.TrimSpace(l), "newTag:") {
			indent, _, _ := strings.Cut(l, "newTag:")
			return indent + "newTag: " + tag
		}
		return l
	})
}

// SetChartVersion sets the chart's version (X.Y.Z) and appVersion (vX.Y.Z) in the
// copy's Chart.yaml.
func (r *Repo) SetChartVersion(tag string) {
	r.t.Helper()
	r.rewriteLines("deploy/helm/otelcol-relay/Chart.yaml", func(l string) string {
		switch {
		case strings.HasPrefix(l, "version:"):
			return "version: " + tag[1:]
		case strings.HasPrefix(l, "appVersion:"):
			return "appVersion: " + tag
		}
		return l
	})
}

// rewriteLines replaces each line of the copy's file p with what f makes of it.
func (r *Repo) rewriteLines(p string, f func(string) string) {
	r.t.Helper()
	lines := strings.Split(r.read(p), "\n")
	for i, l := range lines {
		lines[i] = f(l)
	}
	r.write(p, strings.Join(lines, "\n"))
}

// PrependChangelog puts a `## version` section with one entry in front of the
// changelog's first section.
func (r *Repo) PrependChangelog(version string) {
	r.t.Helper()
	r.PrependSection("CHANGELOG.md", version)
}

// PrependSection puts a `## version` section with one entry in front of the first
// section of file (CHANGELOG.md, UPGRADING.md).
func (r *Repo) PrependSection(file, version string) {
	r.t.Helper()
	s := r.read(file)
	i := strings.Index(s, "\n## ")
	if i < 0 {
		r.t.Fatalf("%s has no section", file)
	}
	r.write(file, s[:i+1]+"## "+version+"\n\n"+ChangelogEntry(version)+"\n"+s[i:])
}

// ChangelogEntry is the entry PrependChangelog writes for version.
func ChangelogEntry(version string) string { return "- Release " + version + "." }

// NextPatch is the tag of the patch release after version X.Y.Z.
func NextPatch(t tb.T, version string) string {
	t.Helper()
	i := strings.LastIndex(version, ".")
	n, err := strconv.Atoi(version[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("VERSION %q is not X.Y.Z", version)
	}
	return "v" + version[:i+1] + strconv.Itoa(n+1)
}

func (r *Repo) read(rel string) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.Dir, rel))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

func (r *Repo) write(rel, s string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.Dir, rel), []byte(s), 0o644); err != nil {
		r.t.Fatal(err)
	}
}
