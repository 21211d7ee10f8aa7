// SPDX-License-Identifier: Apache-2.0

package manifest

import (
	"fmt"
	"strings"
)

// DocBlock returns the body of the first fenced block of language lang (```lang)
// after marker in a Markdown document's section heading: from the heading's line to
// the next heading of its level or above. Tests run the docs' blocks verbatim, so
// a doc that loses its section, its marker or its block is an error naming which.
func DocBlock(doc, heading, marker, lang string) (string, error) {
	_, section, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok && strings.HasPrefix(doc, heading+"\n") {
		section, ok = doc[len(heading)+1:], true
	}
	if !ok {
		return "", fmt.Errorf("no section %q", heading)
	}
	section = sectionBody(section, strings.IndexFunc(heading, func(r rune) bool { return r != '#' }))
	_, rest, ok := strings.Cut(section, marker)
	if !ok {
		return "", fmt.Errorf("section %q: no %q", heading, marker)
	}
	// The marker may open the block itself ("```yaml\n# file.yaml").
	if strings.HasPrefix(marker, "```") {
		rest = marker + rest
	}
	fence := "```" + lang + "\n"
	before, body, ok := strings.Cut(rest, fence)
	if !ok {
		return "", fmt.Errorf("section %q: no ```%s block after %q", heading, lang, marker)
	}
	body, _, ok = strings.Cut(body, "```")
	if !ok {
		return "", fmt.Errorf("section %q: the ```%s block after %q is not closed", heading, lang, marker)
	}
	// A block inside a list item is indented as its fence is: its lines are the
	// block's without that indentation (CommonMark), so YAML reads as written.
	indent := before[strings.LastIndex(before, "\n")+1:]
	if indent == "" || strings.Trim(indent, " ") != "" {
		return body, nil
	}
	lines := strings.Split(strings.TrimRight(body, " "), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, indent)
	}
	return strings.Join(lines, "\n"), nil
}

// sectionBody cuts s at the first heading of level or above that is not inside a
// fenced block (a shell comment in a block starts with # too).
func sectionBody(s string, level int) string {
	fenced := false
	off := 0
	for line := range strings.SplitAfterSeq(s, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			fenced = !fenced
		case !fenced && level > 0 && isHeading(line, level):
			return s[:off]
		}
		off += len(line)
	}
	return s
}

// isHeading: line is a Markdown heading of level 1 to max.
func isHeading(line string, maxLevel int) bool {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	return n >= 1 && n <= maxLevel && strings.HasPrefix(line[n:], " ")
}
