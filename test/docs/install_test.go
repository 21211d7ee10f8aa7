// SPDX-License-Identifier: Apache-2.0

package docs_test

// The install commands of deploy/README.md and the pages of deploy/docs, read as a
// user copies them.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// shBlock is one ```sh block of a Markdown file and the section it is in.
type shBlock struct {
	section  string   // the heading line above it
	prose    string   // the section's text outside code blocks
	commands []string // its lines, continuation lines joined
}

// shBlocks returns the ```sh blocks of a Markdown file.
func shBlocks(t *testing.T, path string) []shBlock {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		blocks  []shBlock
		section string
		prose   = map[string]*strings.Builder{}
		cur     *shBlock
		fence   bool
		pending string
	)
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			if fence && cur != nil {
				blocks = append(blocks, *cur)
				cur = nil
			}
			if !fence && line == "```sh" {
				cur = &shBlock{section: section}
			}
			fence = !fence
		case fence && cur != nil:
			if c, ok := strings.CutSuffix(line, "\\"); ok {
				pending += c
				continue
			}
			cur.commands = append(cur.commands, pending+line)
			pending = ""
		case !fence && strings.HasPrefix(line, "#"):
			section = line
		case !fence:
			if prose[section] == nil {
				prose[section] = &strings.Builder{}
			}
			prose[section].WriteString(line + "\n")
		}
	}
	for i := range blocks {
		if p := prose[blocks[i].section]; p != nil {
			blocks[i].prose = p.String()
		}
	}
	return blocks
}

// installDocs are the install guide and its operations and reference pages.
func installDocs(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "deploy", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "deploy", "README.md")}, pages...)
}

var kubectlCreate = regexp.MustCompile(`\bkubectl\b.*\bcreate (namespace|configmap|secret)\b`)

// fromZero is the section whose commands run on a cluster where nothing of
// otelcol-relay exists yet (cert-manager writes the Secrets, not
// hack/dev-certs.sh). test/cluster also runs its block with the By-hand backend
// keypair line put in front of its first `kubectl apply --server-side`, which is
// the overlay's.
const fromZero = "## Certificates from cert-manager"

// TestDeployReadmeCommandsReplaceWhatExists: hack/dev-certs.sh creates every
// Secret and ConfigMap an overlay reads, with stand-in credentials, and the README
// then says to replace them with its own commands; a bare `kubectl create` stops
// at AlreadyExists. So each create is only a printer for a server-side apply,
// which also keeps a Secret's data out of the last-applied annotation that a
// client-side apply writes.
func TestDeployReadmeCommandsReplaceWhatExists(t *testing.T) {
	const apply = "--dry-run=client -o yaml | kubectl apply --server-side --force-conflicts -f -"
	seen := 0
	root := repoRoot(t)
	for _, doc := range installDocs(t, root) {
		rel, _ := filepath.Rel(root, doc)
		for _, b := range shBlocks(t, doc) {
			if b.section == fromZero {
				continue
			}
			for _, c := range b.commands {
				if !kubectlCreate.MatchString(c) {
					continue
				}
				seen++
				if !strings.Contains(c, apply) {
					t.Errorf("%s %q: %q fails on an object that exists already (hack/dev-certs.sh made it): end it with %q", rel, b.section, c, apply)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("deploy/README.md and deploy/docs have no kubectl create command: the parser is wrong")
	}
}

// TestDeployReadmeInstallsAnImageTheNodesPull: the manifests name the image `make
// image` tags, on localhost/ where no node pulls from. Every section of
// deploy/README.md and deploy/docs that applies a shipped overlay as it is says how
// `images:` points it at a registry, and the AKS page says so for AKS.
func TestDeployReadmeInstallsAnImageTheNodesPull(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "components", "image", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []struct {
			NewName string `json:"newName"`
		} `json:"images"`
	}
	if err = yaml.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	if len(k.Images) == 0 || !strings.HasPrefix(k.Images[0].NewName, "localhost/") {
		t.Skipf("the manifests name %+v, not a localhost/ image", k.Images)
	}
	for _, doc := range installDocs(t, root) {
		rel, _ := filepath.Rel(root, doc)
		for _, b := range shBlocks(t, doc) {
			for _, c := range b.commands {
				if strings.Contains(c, "-k deploy/overlays/") && !strings.Contains(b.prose, "`images:`") {
					t.Errorf("%s %q: %q runs %s, which a node cannot pull, and the section does not say how `images:` changes it", rel, b.section, c, k.Images[0].NewName)
				}
			}
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "deploy", "docs", "aks.md"))
	if err != nil {
		t.Fatal(err)
	}
	aks := false
	if _, after, ok := strings.Cut(string(readme), "# AKS\n"); ok {
		body, _, _ := strings.Cut(after, "\n## ")
		aks = strings.Contains(body, "`images:`")
	}
	if !aks {
		t.Errorf("deploy/docs/aks.md does not say that AKS nodes need the image from a registry (`images:`)")
	}
}
