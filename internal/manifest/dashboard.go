// SPDX-License-Identifier: Apache-2.0

package manifest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// DashboardPanel is one panel of a dashboard deploy/components/dashboards ships.
type DashboardPanel struct {
	Dashboard string // the file's name without .json
	Title     string `json:"title"`
	Targets   []struct {
		Expr   string `json:"expr"`
		Legend string `json:"legendFormat"`
	} `json:"targets"`
}

// DashboardPanels reads every panel of every dashboard the component ships, in
// file order.
func DashboardPanels(t tb.T) []DashboardPanel {
	t.Helper()
	files, err := filepath.Glob(Dir("components", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in deploy/components/dashboards (%v)", err)
	}
	var out []DashboardPanel
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []DashboardPanel `json:"panels"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, p := range d.Panels {
			p.Dashboard = strings.TrimSuffix(filepath.Base(f), ".json")
			out = append(out, p)
		}
	}
	return out
}
