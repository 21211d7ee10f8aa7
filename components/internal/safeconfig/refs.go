// SPDX-License-Identifier: Apache-2.0

package safeconfig

import (
	"fmt"
	"strings"
)

// Ref is one ${...} reference found in a raw config string.
type Ref struct {
	Scheme string // "env" (also for ${NAME}, the default scheme), "file", or another scheme
	Name   string // variable name or file path
	// Def is the literal default of ${env:NAME:-default}; HasDef tells "" from absent.
	Def    string
	HasDef bool
}

// Scan splits a raw config string into its ${...} references and the literal text
// around them. "$$" is the confmap escape for a literal "$", so "$${env:X}" is text,
// not a reference.
func Scan(s string) (refs []Ref, literal string) {
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			lit.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			lit.WriteByte('$')
			i++
			continue
		case '{':
		default:
			lit.WriteByte(s[i])
			continue
		}
		end := closingBrace(s, i+2)
		if end < 0 { // unterminated: confmap leaves it as text
			lit.WriteString(s[i:])
			break
		}
		refs = append(refs, parseRef(s[i+2:end]))
		i = end
	}
	return refs, lit.String()
}

// closingBrace returns the index of the "}" that closes a "${" whose body starts at
// from, allowing nested references in defaults (${env:A:-${env:B}}).
func closingBrace(s string, from int) int {
	depth := 1
	for j := from; j < len(s); j++ {
		switch {
		case s[j] == '$' && j+1 < len(s) && s[j+1] == '{':
			depth++
			j++
		case s[j] == '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

func parseRef(body string) Ref {
	scheme, rest, ok := strings.Cut(body, ":")
	if !ok { // ${NAME}: the collector's default scheme is env
		return Ref{Scheme: "env", Name: body}
	}
	r := Ref{Scheme: scheme, Name: rest}
	if scheme == "env" {
		r.Name, r.Def, r.HasDef = strings.Cut(rest, ":-")
	}
	return r
}

// MaskRefs replaces each ${...} reference of s with a placeholder that parses as
// plain text in any part of a URL, so the literal parts can be parsed as a URL
// and each part's references restored with Unmask.
func MaskRefs(s string) (string, []string) {
	var b strings.Builder
	var orig []string
	for i := 0; i < len(s); i++ {
		if s[i] == '$' && i+1 < len(s) {
			switch s[i+1] {
			case '$':
				b.WriteString("$$")
				i++
				continue
			case '{':
				if end := closingBrace(s, i+2); end >= 0 {
					b.WriteString(placeholder(len(orig)))
					orig = append(orig, s[i:end+1])
					i = end
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String(), orig
}

// Unmask puts back in s the references MaskRefs replaced.
func Unmask(s string, orig []string) string {
	for i, o := range orig {
		s = strings.ReplaceAll(s, placeholder(i), o)
	}
	return s
}

// placeholder ends in "x" so that placeholder(1) is not a prefix of placeholder(10).
func placeholder(i int) string { return fmt.Sprintf("safeconfigref%dx", i) }
