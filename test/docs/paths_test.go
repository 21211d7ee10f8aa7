// SPDX-License-Identifier: Apache-2.0

// Package docs_test checks that what the repository's documents point a reader to
// exists. A doc that names a file which was renamed or never written sends an
// operator looking for something that is not there, and nothing else catches it.
package docs_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// topDirs are the repository's own top-level folders: a backticked word that starts
// with one of them is read as a path into the repository.
var topDirs = []string{"bench/", "cmd/", "components/", "config/", "deploy/", "docs/", "hack/", "internal/", "test/", ".ci/"}

var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	backtick = regexp.MustCompile("`([^`\\s]+)`")
	// bareWord finds a path written without backticks in a config comment.
	bareWord = regexp.MustCompile(`(?:^|[\s(])((?:bench|cmd|components|config|deploy|docs|hack|internal|test)/[\w./-]*[\w/])`)
)

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// trackedDocs lists the Markdown files and the YAML configs and manifests (whose
// comments name files too) that git tracks, outside generated code and bench results.
func trackedDocs(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "*.md", "*.yaml", "*.yml", "Makefile", "Dockerfile")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "bench/results/") || strings.HasSuffix(f, "documentation.md") || strings.HasPrefix(f, "CHANGELOG") {
			continue
		}
		files = append(files, f)
	}
	return files
}

// candidates returns the repository paths a line names: relative Markdown links,
// and backticked words that start with one of topDirs.
func candidates(line string, markdown bool) []string {
	var paths []string
	if markdown {
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			p := m[1]
			if strings.Contains(p, "://") || strings.HasPrefix(p, "#") || strings.HasPrefix(p, "mailto:") {
				continue
			}
			paths = append(paths, p)
		}
	}
	words := backtick.FindAllStringSubmatch(line, -1)
	if !markdown {
		if i := strings.Index(line, "#"); i >= 0 {
			words = append(words, bareWord.FindAllStringSubmatch(line[i:], -1)...)
		}
	}
	for _, m := range words {
		p := strings.TrimSuffix(strings.TrimSuffix(m[1], ","), ".")
		for _, d := range topDirs {
			if strings.HasPrefix(p, d) {
				paths = append(paths, "/"+p)
				break
			}
		}
	}
	return paths
}

// placeholder reports a path that stands for a family of files (`components/<name>`,
// `bin/*`, `...`), which cannot be checked as written.
func placeholder(p string) bool {
	return strings.ContainsAny(p, "<>*{}$@") || strings.Contains(p, "...") || strings.Contains(p, "NNNN")
}

// goIdent matches a Go identifier after a package path (`internal/e2e.Sender`).
var goIdent = regexp.MustCompile(`\.[A-Z][A-Za-z0-9_]*$`)

// exists reports whether a named path is in the repository. A backticked path may be
// written from the root or from any folder above the document (deploy/base names
// `components/x` for deploy/components/x), and `internal/metadata` names the
// generated package every component has.
func exists(root, doc, p string, backticked bool) bool {
	var tries []string
	if backticked {
		p = goIdent.ReplaceAllString(strings.TrimPrefix(p, "/"), "")
		for d := filepath.Dir(doc); ; d = filepath.Dir(d) {
			tries = append(tries, filepath.Join(root, d, p))
			if d == "." || d == "/" {
				break
			}
		}
		if m, _ := filepath.Glob(filepath.Join(root, "components", "*", p)); len(m) > 0 {
			return true
		}
	} else {
		tries = append(tries, filepath.Join(root, filepath.Dir(doc), p))
	}
	for _, f := range tries {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}

func TestDocsNameExistingPaths(t *testing.T) {
	root := repoRoot(t)
	for _, doc := range trackedDocs(t, root) {
		f, err := os.Open(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		markdown := strings.HasSuffix(doc, ".md")
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			for _, p := range candidates(sc.Text(), markdown) {
				p = strings.SplitN(p, "#", 2)[0]
				p = strings.SplitN(p, ":", 2)[0] // file.go:123
				if p == "" || p == "/" || placeholder(p) {
					continue
				}
				if !exists(root, doc, p, strings.HasPrefix(p, "/")) {
					t.Errorf("%s:%d names %s, which is not in the repository", doc, n, strings.TrimPrefix(p, "/"))
				}
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
	}
}
