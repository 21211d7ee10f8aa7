// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// recipesDoc shows each recipe's config as written: test/e2e runs the files, so a
// block that differs from its file shows a config nobody tested.
const recipesDoc = "docs/recipes.md"

// recipeLink is how a line names the file of the yaml block that follows it.
var recipeLink = regexp.MustCompile(`\]\(\.\./(config/recipes/[\w.-]+\.yaml)\)`)

// recipeBlocks returns, per recipe file, the yaml blocks of doc whose last
// non-blank line before the fence links that file.
func recipeBlocks(doc string) map[string][]string {
	out := map[string][]string{}
	lines := strings.SplitAfter(doc, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimRight(lines[i], "\n") != "```yaml" {
			continue
		}
		var body strings.Builder
		j := i + 1
		for ; j < len(lines) && strings.TrimRight(lines[j], "\n") != "```"; j++ {
			body.WriteString(lines[j])
		}
		prev := ""
		for k := i - 1; k >= 0 && prev == ""; k-- {
			prev = strings.TrimSpace(lines[k])
		}
		if m := recipeLink.FindStringSubmatch(prev); m != nil {
			out[m[1]] = append(out[m[1]], body.String())
		}
		i = j
	}
	return out
}

// TestRecipesDocShowsTheFiles: every file in config/recipes/ is shown once in
// docs/recipes.md, byte for byte, right after the line that links it.
func TestRecipesDocShowsTheFiles(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, recipesDoc))
	if err != nil {
		t.Fatal(err)
	}
	blocks := recipeBlocks(string(doc))
	files, err := filepath.Glob(filepath.Join(root, "config", "recipes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recipes in config/recipes (%v)", err)
	}
	var names []string
	for _, f := range files {
		name := filepath.ToSlash(strings.TrimPrefix(f, root+string(filepath.Separator)))
		names = append(names, name)
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch got := blocks[name]; {
		case len(got) == 0:
			t.Errorf("%s does not show %s: put it in a ```yaml block right after a line linking [`%s`](../%s)", recipesDoc, name, name, name)
		case len(got) > 1:
			t.Errorf("%s shows %s %d times; once is enough", recipesDoc, name, len(got))
		case got[0] != string(want):
			t.Errorf("%s: the block after the link to %s differs from the file; copy the file into it:\n%s", recipesDoc, name, firstDiff(got[0], string(want)))
		}
	}
	for name := range blocks {
		if !slices.Contains(names, name) {
			t.Errorf("%s shows %s, which is not in config/recipes", recipesDoc, name)
		}
	}
}

// firstDiff names the first line where the doc's block and the file part.
func firstDiff(doc, file string) string {
	d, f := strings.Split(doc, "\n"), strings.Split(file, "\n")
	for i := 0; i < len(d) || i < len(f); i++ {
		var dl, fl string
		if i < len(d) {
			dl = d[i]
		}
		if i < len(f) {
			fl = f[i]
		}
		if dl != fl || i >= len(d) || i >= len(f) {
			return "line " + strconv.Itoa(i+1) + ":\n  doc:  " + dl + "\n  file: " + fl
		}
	}
	return "(equal lines, different bytes)"
}
