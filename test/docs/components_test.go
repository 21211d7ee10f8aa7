// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// upstreamRow is a row of README.md's table of upstream components.
type upstreamRow struct {
	line                              int
	kind, typ, module, version, level string
}

// upstreamRows reads the table under "## Components" whose header has a module
// column: kind | type | module | version | stability.
func upstreamRows(t *testing.T, readme string) []upstreamRow {
	t.Helper()
	_, after, ok := strings.Cut(readme, "\n## Components\n")
	if !ok {
		t.Fatal("README.md has no Components section")
	}
	start := strings.Count(readme[:len(readme)-len(after)], "\n") + 1
	var rows []upstreamRow
	inTable := false
	for i, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, "| kind | type | module |") {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(line, "| ---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.Trim(strings.TrimSpace(cells[j]), "`")
		}
		if len(cells) != 5 {
			t.Fatalf("README.md:%d: want 5 cells, got %q", start+i, line)
		}
		module := cells[2]
		if strings.HasPrefix(module, "opentelemetry-collector-contrib/") {
			module = "github.com/open-telemetry/" + module
		}
		rows = append(rows, upstreamRow{start + i, cells[0], cells[1], module, cells[3], cells[4]})
	}
	if len(rows) == 0 {
		t.Fatal("README.md's Components section has no upstream table")
	}
	return rows
}

// TestReadmeComponentsMatchUpstream: each upstream component's row in README.md
// gives the version go.mod requires and the stability its module's metadata.yaml
// declares at that version (for logs / metrics, a connector's logs to logs /
// metrics to metrics, or the one level of the rest).
func TestReadmeComponentsMatchUpstream(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := upstreamRows(t, string(readme))
	args := []string{"list", "-m", "-json"}
	for _, r := range rows {
		args = append(args, r.module)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	mods := map[string]struct{ Version, Dir string }{}
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var m struct{ Path, Version, Dir string }
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		mods[m.Path] = struct{ Version, Dir string }{m.Version, m.Dir}
	}
	for _, r := range rows {
		m := mods[r.module]
		if m.Version != r.version {
			t.Errorf("README.md:%d: %s at %s, go.mod requires %s", r.line, r.module, r.version, m.Version)
		}
		if m.Dir == "" {
			t.Errorf("README.md:%d: %s is not in the module cache (go mod download)", r.line, r.module)
			continue
		}
		raw, err := os.ReadFile(filepath.Join(m.Dir, "metadata.yaml"))
		if err != nil {
			t.Errorf("README.md:%d: %v", r.line, err)
			continue
		}
		var md struct {
			Type   string
			Status struct {
				Stability map[string][]string
			}
		}
		if err := yaml.Unmarshal(raw, &md); err != nil {
			t.Fatal(err)
		}
		if md.Type != r.typ {
			t.Errorf("README.md:%d: type %s, %s declares %s", r.line, r.typ, r.module, md.Type)
		}
		level := map[string]string{} // signal -> level
		for l, signals := range md.Status.Stability {
			for _, s := range signals {
				// A connector's levels are per pair of signals: logs_to_logs is
				// its level for logs; a pair that changes signal has no column.
				if from, to, pair := strings.Cut(s, "_to_"); pair {
					if from != to {
						continue
					}
					s = from
				}
				level[s] = l
			}
		}
		var want string
		if strings.Contains(r.level, " / ") {
			want = or(level["logs"], "–") + " / " + or(level["metrics"], "–")
		} else {
			// One level for the kind's only signal, or for every signal but
			// profiles (still in development everywhere).
			var levels []string
			for s, l := range level {
				if s != "profiles" && !slices.Contains(levels, l) {
					levels = append(levels, l)
				}
			}
			want = strings.Join(levels, ", ")
		}
		if r.level != want {
			t.Errorf("README.md:%d: %s stability %q, its metadata.yaml at %s says %q", r.line, r.typ, r.level, m.Version, want)
		}
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
