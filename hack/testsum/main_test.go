// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run feeds go test -json of the fixture package through a summary.
func run(t *testing.T, verbose bool, env ...string) (string, string) {
	t.Helper()
	cmd := exec.Command("go", "test", "-json", "-count=1", "-timeout=3s", "./testdata/fixture")
	cmd.Env = append(os.Environ(), env...)
	raw, _ := cmd.Output() // the fixture fails on purpose
	var out bytes.Buffer
	s := newSummary(&out, verbose)
	plain, err := s.read(bytes.NewReader(raw))
	if err != nil || plain != 0 {
		t.Fatalf("go test -json wrote %d lines that are not JSON (%v):\n%s", plain, err, out.String())
	}
	times := filepath.Join(t.TempDir(), "times")
	if err = s.finish(3, times); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(times)
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), string(b)
}

func TestFailuresOnlyAndNamedAtTheEnd(t *testing.T) {
	out, times := run(t, false)
	for _, want := range []string{"loud line", "loud failure", "sub failure", "sub ok line",
		"testsum: FAILED: TestLoud (", "TestParent (", "testsum: slowest of 5 tests: TestSlow "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "quiet line") {
		t.Errorf("a passing test's log is printed:\n%s", out)
	}
	if strings.Contains(out, "NEVER ENDED") {
		t.Errorf("every test ended, yet:\n%s", out)
	}
	// The cleanup's message last, and before it the failure, as a Cleanup that
	// dumps a peer's log leaves a failed test's messages.
	if !strings.Contains(times, " FAIL  github.com/otelcol-relay/otelcol-relay/hack/testsum/testdata/fixture TestLoud # "+
		"fixture_test.go:16: what a cleanup logs after the failure <- fixture_test.go:18: loud failure <- fixture_test.go:17: loud line\n") {
		t.Errorf("times does not say TestLoud failed, with its last three messages:\n%s", times)
	}
	if !strings.Contains(times, " TestParent # fixture_test.go:23: sub failure <- fixture_test.go:22: sub ok line\n") {
		t.Errorf("times does not give TestParent's failing subtest's message:\n%s", times)
	}
	if first := strings.SplitN(times, "\n", 2)[0]; !strings.HasSuffix(first, " TestSlow") {
		t.Errorf("times' first line is %q, want TestSlow's:\n%s", first, times)
	}
	if n := strings.Count(times, "\n"); n != 5 {
		t.Errorf("times has %d lines, want one per top-level test:\n%s", n, times)
	}
}

func TestVerbosePrintsEverything(t *testing.T) {
	out, _ := run(t, true)
	for _, want := range []string{"quiet line", "loud failure", "testsum: FAILED: TestLoud ("} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestTimeoutNamesTheTestThatNeverEnded(t *testing.T) {
	out, times := run(t, false, "TESTSUM_HANG=1")
	if !strings.Contains(times, " NEVER github.com/otelcol-relay/otelcol-relay/hack/testsum/testdata/fixture TestHang # panic: test timed out after 3s <- fixture_test.go:32: hang line\n") {
		t.Errorf("times does not say TestHang never ended:\n%s", times)
	}
	for _, want := range []string{"hang line", "panic: test timed out", "testsum: NEVER ENDED (a timeout or a panic; its output is above): TestHang"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
