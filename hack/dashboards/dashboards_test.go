// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The committed dashboards are what build returns: an edit to the JSON by hand, or
// to the tables without `make dashboards`, fails here.
func TestCommittedDashboardsAreBuilt(t *testing.T) {
	files, err := build()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "deploy", "components", "dashboards")
	entries, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(files) {
		t.Errorf("%s holds %d dashboards, build returns %d: run make dashboards", dir, len(entries), len(files))
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			t.Errorf("%v: run make dashboards", err)
			continue
		}
		if !bytes.Equal(got, f.JSON) {
			t.Errorf("%s differs from what build returns: run make dashboards", f.Name)
		}
	}
}

// Each panel has a title and queries, each query an expression and a refId unique
// in its panel, and the panels do not overlap on the grid.
func TestPanelsAreWellFormed(t *testing.T) {
	files, err := build()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		var d struct {
			UID    string `json:"uid"`
			Panels []struct {
				Title   string `json:"title"`
				GridPos struct{ H, W, X, Y int }
				Targets []struct {
					RefID string `json:"refId"`
					Expr  string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(f.JSON, &d); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if d.UID == "" || len(d.Panels) == 0 {
			t.Errorf("%s: uid %q, %d panels", f.Name, d.UID, len(d.Panels))
		}
		taken := map[[2]int]string{}
		for _, p := range d.Panels {
			if p.Title == "" || len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has %d queries", f.Name, p.Title, len(p.Targets))
			}
			refs := map[string]bool{}
			for _, q := range p.Targets {
				if q.Expr == "" || q.RefID == "" || refs[q.RefID] {
					t.Errorf("%s: panel %q: query %+v", f.Name, p.Title, q)
				}
				refs[q.RefID] = true
			}
			for x := p.GridPos.X; x < p.GridPos.X+p.GridPos.W; x++ {
				for y := p.GridPos.Y; y < p.GridPos.Y+p.GridPos.H; y++ {
					if other, ok := taken[[2]int{x, y}]; ok {
						t.Errorf("%s: panels %q and %q overlap", f.Name, other, p.Title)
					}
					taken[[2]int{x, y}] = p.Title
				}
			}
		}
	}
}
