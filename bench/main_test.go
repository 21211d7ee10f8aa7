// SPDX-License-Identifier: Apache-2.0

package main

import "testing"

// The report's command line is one a reader can paste: values with spaces
// quoted, the note (printed on its own) left out.
func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "go run ./bench"},
		{[]string{"-runs", "5", "-note", "a loaded machine", "-name", "x"}, "go run ./bench -runs 5 -name x"},
		{[]string{"-note=quiet", "-alt-bin", "/tmp/my build"}, "go run ./bench -alt-bin '/tmp/my build'"},
		{[]string{"-variants", "it's"}, `go run ./bench -variants 'it'\''s'`},
	} {
		if got := command(tc.args); got != tc.want {
			t.Errorf("command(%q) = %s, want %s", tc.args, got, tc.want)
		}
	}
}
