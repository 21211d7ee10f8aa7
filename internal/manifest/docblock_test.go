// SPDX-License-Identifier: Apache-2.0

package manifest

import (
	"strings"
	"testing"
)

const doc = `# Title

## Install

Then the Secrets:

` + "```sh" + `
# a comment, not a heading
kubectl apply -k my-aks
` + "```" + `

### Files

` + "```yaml" + `
# my-aks/kustomization.yaml
resources: [a]
` + "```" + `

## Upgrade

` + "```yaml" + `
# my-aks/other.yaml
x: 1
` + "```" + `

## In a list

1. Write it:

   ` + "```yaml" + `
   resources:
     - a
   ` + "```" + `
`

func TestDocBlock(t *testing.T) {
	for _, tc := range []struct {
		name, heading, marker, lang, want, err string
	}{
		{name: "sh after a text marker", heading: "## Install", marker: "Then the Secrets", lang: "sh",
			want: "# a comment, not a heading\nkubectl apply -k my-aks\n"},
		{name: "a marker that opens the block, in a subsection", heading: "## Install",
			marker: "```yaml\n# my-aks/kustomization.yaml", lang: "yaml",
			want: "# my-aks/kustomization.yaml\nresources: [a]\n"},
		{name: "the next section is not searched", heading: "## Install",
			marker: "# my-aks/other.yaml", lang: "yaml", err: `section "## Install": no "# my-aks/other.yaml"`},
		{name: "the first heading of the document", heading: "# Title",
			marker: "```yaml\n# my-aks/other.yaml", lang: "yaml", want: "# my-aks/other.yaml\nx: 1\n"},
		{name: "a block in a list item loses the fence's indentation", heading: "## In a list",
			marker: "Write it", lang: "yaml", want: "resources:\n  - a\n"},
		{name: "no section", heading: "## Uninstall", marker: "x", lang: "sh", err: `no section "## Uninstall"`},
		{name: "no block of that language", heading: "## Upgrade", marker: "```yaml", lang: "sh",
			err: "section \"## Upgrade\": no ```sh block after \"```yaml\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DocBlock(doc, tc.heading, tc.marker, tc.lang)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	upToUpgrade := doc[:strings.Index(doc, "\n\n## In a list")+1]
	if _, err := DocBlock(strings.TrimSuffix(upToUpgrade, "```\n"), "## Upgrade", "```yaml", "yaml"); err == nil ||
		!strings.Contains(err.Error(), "not closed") {
		t.Fatalf("an unclosed block: err = %v", err)
	}
}
