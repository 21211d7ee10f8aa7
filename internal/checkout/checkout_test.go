// SPDX-License-Identifier: Apache-2.0

package checkout

import (
	"strings"
	"testing"
)

// TestNextReleaseWritesEveryVersionPlace: the next release's commit says its
// version wherever release-check reads one (VERSION, the image tag, the chart's
// version and appVersion, the install guide's pins, the CHANGELOG and UPGRADING
// sections), and nothing there still says the last one.
func TestNextReleaseWritesEveryVersionPlace(t *testing.T) {
	r := Copy(t)
	old := r.TagRelease()
	tag := r.NextRelease(func(string) {})
	if tag == old {
		t.Fatalf("NextRelease tagged %s again", tag)
	}
	for file, want := range map[string][]string{
		"VERSION": {tag[1:] + "\n"},
		"deploy/components/image/kustomization.yaml": {"newTag: " + tag + "\n"},
		"deploy/helm/otelcol-relay/Chart.yaml":       {"\nversion: " + tag[1:] + "\n", "\nappVersion: " + tag + "\n"},
		"deploy/README.md":                           {"?ref=" + tag, "newTag: " + tag},
		"CHANGELOG.md":                               {"\n## " + tag[1:] + "\n"},
		"UPGRADING.md":                               {"\n## " + tag[1:] + "\n"},
	} {
		got := r.read(file)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s at %s: no %q", file, tag, w)
			}
		}
		if file != "CHANGELOG.md" && file != "UPGRADING.md" && strings.Contains(got, old[1:]+"\n") {
			t.Errorf("%s at %s still says %s", file, tag, old)
		}
	}
}
