// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

// A run written -into a report becomes a marked section of it, replaces its
// own earlier section and no other, and a report written whole keeps them.
func TestSections(t *testing.T) {
	base := "# Relay benchmark: baseline\n\nfigures\n"
	one := withSection(base, "processing", demote("## Section processing\n\n## Steady\n\n### CPU\n"))
	if !strings.HasPrefix(one, base) || !strings.Contains(one, "\n### Steady\n") || !strings.Contains(one, "\n#### CPU\n") || !strings.Contains(one, "## Section processing\n") {
		t.Errorf("appended:\n%s", one)
	}
	two := withSection(one, "other", "## Section other\n")
	again := withSection(two, "processing", "## Section processing\n\nnew figures\n")
	if strings.Contains(again, "### Steady") || !strings.Contains(again, "new figures") || !strings.Contains(again, "## Section other\n") || strings.Count(again, "bench section processing: begin") != 1 {
		t.Errorf("replaced:\n%s", again)
	}
	secs := sections(again)
	if len(secs) != 2 || !strings.Contains(secs[0], "new figures") || !strings.Contains(secs[1], "Section other") {
		t.Errorf("sections: %q", secs)
	}
	if strings.Index(again, "new figures") > strings.Index(again, "Section other") {
		t.Errorf("a replaced section moved:\n%s", again)
	}
}
