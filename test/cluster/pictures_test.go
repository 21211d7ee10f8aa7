// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"context"
	"image/color"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// dashboardPanel is one panel of a shipped dashboard, its queries with the
// install's variables in.
type dashboardPanel struct {
	dashboard, title string
	queries          []panelQuery
}

type panelQuery struct{ expr, legend string }

// shippedPanels are the panels of deploy/components/dashboards, with vars
// replacing Grafana's variables in each query.
func shippedPanels(t *testing.T, vars *strings.Replacer) []dashboardPanel {
	t.Helper()
	var out []dashboardPanel
	for _, p := range manifest.DashboardPanels(t) {
		dp := dashboardPanel{dashboard: p.Dashboard, title: p.Title}
		for _, q := range p.Targets {
			dp.queries = append(dp.queries, panelQuery{vars.Replace(q.Expr), q.Legend})
		}
		out = append(out, dp)
	}
	return out
}

var unsetLabel = regexp.MustCompile(`\{\{[^}]*\}\}`)

// rangeSeries is one series of a range query: its legend and its points.
type rangeSeries struct {
	legend string
	points plotter.XYs // seconds since from, value
}

func (p *prometheus) queryRange(q panelQuery, from, to time.Time, step time.Duration) ([]rangeSeries, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	result, err := p.api().QueryRange(ctx, q.expr, from, to, step)
	if err != nil {
		return nil, err
	}
	var out []rangeSeries
	for _, s := range result {
		legend := q.legend
		for k, v := range s.Labels {
			legend = strings.ReplaceAll(legend, "{{"+k+"}}", v)
		}
		// A label the series lacks shows as nothing, as Grafana shows it.
		rs := rangeSeries{legend: strings.Join(strings.Fields(unsetLabel.ReplaceAllString(legend, "")), " ")}
		for _, pt := range s.Points {
			rs.points = append(rs.points, plotter.XY{X: pt.At.Sub(from).Seconds(), Y: pt.Value})
		}
		out = append(out, rs)
	}
	return out, nil
}

// drawDashboards plots every panel of each shipped dashboard over [from, to] as
// prom recorded it, one PNG per dashboard in dir (<dashboard>.png), two panels a
// row, with the faults the test made marked: what the dashboards show, for
// readers without Grafana (deploy/docs/monitoring.md).
func drawDashboards(t *testing.T, prom *prometheus, panels []dashboardPanel, from, to time.Time, marks map[string]time.Time, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	palette := []color.Color{
		color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
		color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	}
	byDashboard := map[string][]*plot.Plot{}
	var order []string
	for _, panel := range panels {
		pl := plot.New()
		pl.Title.Text = panel.title
		pl.X.Label.Text = "seconds into the test"
		pl.Legend.Top = true
		pl.Add(plotter.NewGrid())
		n := 0
		for _, q := range panel.queries {
			series, err := prom.queryRange(q, from, to, 5*time.Second)
			if err != nil {
				t.Errorf("%s: %s: %v", panel.title, q.expr, err)
				continue
			}
			slices.SortFunc(series, func(a, b rangeSeries) int { return strings.Compare(a.legend, b.legend) })
			for _, s := range series {
				if len(s.points) == 0 {
					continue
				}
				ln, err := plotter.NewLine(s.points)
				if err != nil {
					t.Fatal(err)
				}
				ln.Color = palette[n%len(palette)]
				ln.Width = vg.Points(1.2)
				pl.Add(ln)
				pl.Legend.Add(s.legend, ln)
				n++
			}
		}
		var names []string
		if n > 0 {
			names = slices.Sorted(maps.Keys(marks))
		} else {
			pl.Title.Text += " (no data on the test cluster)"
		}
		for _, name := range names {
			x := marks[name].Sub(from).Seconds()
			mark, err := plotter.NewLine(plotter.XYs{{X: x, Y: pl.Y.Min}, {X: x, Y: pl.Y.Max}})
			if err != nil {
				t.Fatal(err)
			}
			mark.Color = color.Gray{Y: 0x99}
			mark.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
			pl.Add(mark)
			pl.Legend.Add(name, mark)
		}
		if _, ok := byDashboard[panel.dashboard]; !ok {
			order = append(order, panel.dashboard)
		}
		byDashboard[panel.dashboard] = append(byDashboard[panel.dashboard], pl)
	}
	for _, d := range order {
		plots := byDashboard[d]
		var rows [][]*plot.Plot
		for i := 0; i < len(plots); i += 2 {
			row := []*plot.Plot{plots[i], nil}
			if i+1 < len(plots) {
				row[1] = plots[i+1]
			}
			rows = append(rows, row)
		}
		img := vgimg.New(vg.Points(1100), vg.Points(float64(300*len(rows))))
		tiles := draw.Tiles{Rows: len(rows), Cols: 2, PadTop: vg.Points(6), PadBottom: vg.Points(6),
			PadLeft: vg.Points(6), PadRight: vg.Points(12), PadX: vg.Points(18), PadY: vg.Points(18)}
		canvases := plot.Align(rows, tiles, draw.New(img))
		for i, row := range rows {
			for j, pl := range row {
				if pl != nil {
					pl.Draw(canvases[i][j])
				}
			}
		}
		path := filepath.Join(dir, d+".png")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("drew %s", path)
	}
}
