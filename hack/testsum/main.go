// SPDX-License-Identifier: Apache-2.0

// Command testsum reads `go test -json` on stdin and prints what `go test` would
// have printed without -json: the packages' own output as it comes, and a test's
// output only once it has failed (everything as it comes with -v). At the end it
// names the tests that failed, or never ended (a timeout or a panic), and the
// slowest top-level tests; -times writes every top-level test's seconds and
// outcome (ok, FAIL, NEVER ended) to a file, slowest first, and after a failed
// test's name its last messages.
//
// Why: CI keeps only the tail of a run's output. There a failing test's name
// could be a thousand lines above the end, and no line said which test of a
// thirty-minute suite took its minutes.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// test is what testsum keeps of a top-level test, its subtests' output included.
type test struct {
	pkg, name string
	out       strings.Builder
	ended     bool
	failed    bool
	seconds   float64
	// lastMsgs are the first lines of the last lastKept messages a t.Log,
	// t.Error or t.Fatal wrote (or a panic), oldest first: in a failed test, why
	// it failed is among them, even when a Cleanup logged what it tore down
	// after the t.Fatal.
	lastMsgs []string
}

// lastKept is how many of a test's last messages the times file keeps.
const lastKept = 3

// message matches what testing writes for t.Log, t.Error and t.Fatal
// ("    file_test.go:12: text"), and a panic's first line.
var message = regexp.MustCompile(`^\s*(?:[\w.-]+\.go:\d+: |panic: )`)

type summary struct {
	w          io.Writer
	verbose    bool
	tests      map[string]*test // by package and top-level name
	order      []*test
	failedPkgs []string
}

func newSummary(w io.Writer, verbose bool) *summary {
	return &summary{w: w, verbose: verbose, tests: map[string]*test{}}
}

// add takes one event.
func (s *summary) add(e event) {
	if e.Test == "" {
		// build-output: a package's compile errors (Go 1.24 on).
		// go test -json runs the binary as -v does, which ends a passing
		// package with "PASS" before go test's own "ok" line: go test
		// without -v prints only the latter.
		if (e.Action == "output" || e.Action == "build-output") && (s.verbose || e.Output != "PASS\n") {
			fmt.Fprint(s.w, e.Output)
		}
		if e.Action == "fail" {
			s.failedPkgs = append(s.failedPkgs, e.Package)
		}
		return
	}
	top, _, sub := strings.Cut(e.Test, "/")
	key := e.Package + " " + top
	t := s.tests[key]
	if t == nil {
		t = &test{pkg: e.Package, name: top}
		s.tests[key] = t
		s.order = append(s.order, t)
	}
	switch e.Action {
	case "output":
		if message.MatchString(e.Output) {
			if len(t.lastMsgs) == lastKept {
				t.lastMsgs = t.lastMsgs[1:]
			}
			t.lastMsgs = append(t.lastMsgs, strings.Join(strings.Fields(e.Output), " "))
		}
		if s.verbose {
			fmt.Fprint(s.w, e.Output)
		} else {
			t.out.WriteString(e.Output)
		}
	case "pass", "fail", "skip":
		if sub {
			return
		}
		t.ended, t.failed, t.seconds = true, e.Action == "fail", e.Elapsed
		if t.failed && !s.verbose {
			fmt.Fprint(s.w, t.out.String())
		}
		t.out.Reset()
	}
}

// read takes every event of a go test -json stream and returns how many lines
// were not JSON: go test writes some errors (a package that does not build
// with an older Go) as plain lines, which are printed as they are.
func (s *summary) read(r io.Reader) (plain int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			fmt.Fprintln(s.w, sc.Text())
			plain++
			continue
		}
		s.add(e)
	}
	return plain, sc.Err()
}

// finish prints what never ended, the failures and the slowest tests, and
// writes every top-level test's seconds to times unless it is empty.
func (s *summary) finish(slowest int, times string) error {
	var failed, unended []string
	for _, t := range s.order {
		switch {
		case !t.ended:
			// A timeout or a panic ends the binary before the test: its output
			// is all there is to read.
			if !s.verbose {
				fmt.Fprint(s.w, t.out.String())
			}
			unended = append(unended, t.name)
		case t.failed:
			failed = append(failed, fmt.Sprintf("%s (%.1fs)", t.name, t.seconds))
		}
	}
	ended := slices.DeleteFunc(slices.Clone(s.order), func(t *test) bool { return !t.ended })
	slices.SortStableFunc(ended, func(a, b *test) int { return cmp.Compare(b.seconds, a.seconds) })
	if len(ended) > 0 && slowest > 0 {
		var names []string
		for _, t := range ended[:min(slowest, len(ended))] {
			names = append(names, fmt.Sprintf("%s %s", t.name, time.Duration(t.seconds*float64(time.Second)).Round(100*time.Millisecond)))
		}
		fmt.Fprintf(s.w, "testsum: slowest of %d tests: %s\n", len(ended), strings.Join(names, ", "))
	}
	if len(failed) > 0 {
		fmt.Fprintf(s.w, "testsum: FAILED: %s\n", strings.Join(failed, ", "))
	}
	if len(unended) > 0 {
		fmt.Fprintf(s.w, "testsum: NEVER ENDED (a timeout or a panic; its output is above): %s\n", strings.Join(unended, ", "))
	}
	if len(s.failedPkgs) > 0 && len(failed)+len(unended) == 0 {
		fmt.Fprintf(s.w, "testsum: FAILED outside any test: %s\n", strings.Join(s.failedPkgs, ", "))
	}
	if times == "" {
		return nil
	}
	var b strings.Builder
	for _, t := range ended {
		status := "ok"
		if t.failed {
			status = "FAIL"
		}
		fmt.Fprintf(&b, "%8.1f %-5s %s %s%s\n", t.seconds, status, t.pkg, t.name, why(t))
	}
	for _, t := range s.order {
		if !t.ended {
			fmt.Fprintf(&b, "%8s %-5s %s %s%s\n", "-", "NEVER", t.pkg, t.name, why(t))
		}
	}
	return os.WriteFile(times, []byte(b.String()), 0o644)
}

// why is what the times file says after a test that failed or never ended:
// " # " and its last messages, on one line, the last first (the line's start
// is what a short report shows), separated by " <- ".
func why(t *test) string {
	if (t.ended && !t.failed) || len(t.lastMsgs) == 0 {
		return ""
	}
	msgs := slices.Clone(t.lastMsgs)
	slices.Reverse(msgs)
	return " # " + strings.Join(msgs, " <- ")
}

func main() {
	verbose := flag.Bool("v", false, "print every test's output as it comes, as go test -v does")
	slowest := flag.Int("slowest", 10, "how many of the slowest top-level tests to name at the end")
	times := flag.String("times", "", "file to write each top-level test's seconds and outcome to, slowest first")
	flag.Parse()
	s := newSummary(os.Stdout, *verbose)
	if _, err := s.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testsum: reading go test -json:", err)
	}
	if err := s.finish(*slowest, *times); err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(1)
	}
}
