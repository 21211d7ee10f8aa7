// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"fmt"
	"image/color"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The cost curves (issue: cost as work grows): CPU per record at saturation
// against the records of a request (-req10, -req100, none: 1,000), against the
// size of a record (-body200, none, -body4k, -body16k) and against the
// backends (gateway, gateway-vendor, gateway-backends4). A curve is flat per
// record (or per byte, for record size) when the work is; each point is the
// median of its variant's runs, interleaved with the others of the run.

// shapeSuffixes are the run suffixes that change the load, not the collector.
func shapeSuffixes() []runSuffix {
	var out []runSuffix
	for _, rs := range runSuffixes {
		if rs.perRequest > 0 || rs.bodyBytes > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// unshaped is v without the load-shape suffixes at its end: the collector
// (or floor) the point is of.
func unshaped(v string) string {
	rest, _ := peel(v, shapeSuffixes())
	return rest
}

// curvePoint is one variant's place on a curve.
type curvePoint struct {
	variant string
	x       float64 // records a request, or bytes a record
}

// curve is the points of one collector along one dimension, in x order.
type curve struct {
	of     string
	points []curvePoint
}

// curves groups the variants that ran by their collector, along the request
// size (bySize false) or the record size (bySize true). Only collectors with
// at least two points make a curve.
func (r *report) curves(byRecordSize bool) []curve {
	var order []string
	byOf := map[string][]curvePoint{}
	for _, v := range r.variants(true) {
		sh := shapeOf(v)
		if byRecordSize && sh.perRequest != 0 || !byRecordSize && sh.bodyBytes != 0 {
			continue
		}
		x := float64(sh.perRequest)
		if x == 0 {
			x = 1000
		}
		if byRecordSize {
			x = r.median(v, func(x *runResult) float64 { return x.SatRecordBytes })
		}
		of := unshaped(v)
		if _, ok := byOf[of]; !ok {
			order = append(order, of)
		}
		byOf[of] = append(byOf[of], curvePoint{v, x})
	}
	var out []curve
	for _, of := range order {
		pts := byOf[of]
		if len(pts) < 2 {
			continue
		}
		slices.SortFunc(pts, func(a, b curvePoint) int { return cmp.Compare(a.x, b.x) })
		out = append(out, curve{of, pts})
	}
	return out
}

func usPerRecord(x *runResult) float64 { return x.SatCPUsPerM }

func usPerKiB(x *runResult) float64 {
	if x.SatRecordBytes == 0 {
		return 0
	}
	return x.SatCPUsPerM * 1024 / x.SatRecordBytes
}

// writeCurves writes the curves' tables and plot (plotPath, "" for none).
func (r *report) writeCurves(w func(string, ...any), plotPath string) error {
	size, rec := r.curves(false), r.curves(true)
	backends := []string{}
	for _, v := range []string{"gateway", "gateway-vendor", "gateway-backends4"} {
		if len(r.values(v, usPerRecord)) > 0 {
			backends = append(backends, v)
		}
	}
	if len(size) == 0 && len(rec) == 0 && len(backends) < 2 {
		return nil
	}
	w("## Cost as work grows (saturation)\n\n")
	w("CPU per record, µs, median [min–max] of the runs; each point its own variant, interleaved with the others.\n\n")
	if len(size) > 0 {
		w("### Against the records of a request\n\n")
		r.curveTable(w, size, "%.0f a request", usPerRecord, nil)
		// Why not flat: what a request costs whatever it holds (its TLS
		// records, HTTP exchange, queue write) is shared by fewer records.
		for _, c := range size {
			a, b := c.points[0], c.points[len(c.points)-1]
			ya, yb := r.median(a.variant, usPerRecord), r.median(b.variant, usPerRecord)
			perReq := (ya - yb) / (1/a.x - 1/b.x)
			w("- %s: about %.0f µs a request plus %.1f µs a record (from its %.0f- and %.0f-record points)\n", c.of, perReq, yb-perReq/b.x, a.x, b.x)
		}
		w("\n")
	}
	if len(rec) > 0 {
		w("### Against the size of a record\n\nµs per record, then per KiB of OTLP protobuf. Records longer than the default come fewer a request, so that a saturation request stays about 1 MB (fluent-bit's chunks are at most 2 MB; 1,000 records of 16 KiB would pass the receiver's 8 MiB limit).\n\n")
		r.curveTable(w, rec, "%.0f B a record", usPerRecord, usPerKiB)
		w("The default records' log line ends in 420 repeated letters, which gzip takes to almost nothing; the other shapes' lines are words, which compress as logs do: compare per KiB between those shapes, and each collector with the floor at the same shape.\n\n")
	}
	if len(backends) >= 2 {
		w("### Against the backends\n\n| variant | backends | µs per record | over gateway, per added backend |\n|---|---|---|---|\n")
		one := r.median("gateway", usPerRecord)
		for _, v := range backends {
			n := 1 + len(backendsOf(v))
			share := "-"
			if n > 1 && one > 0 {
				each := (r.median(v, usPerRecord) - one) / float64(n-1)
				share = fmt.Sprintf("%.2f µs (%.0f%% of one backend's gateway)", each, 100*each/one)
			}
			w("| %s | %d | %s | %s |\n", v, n, r.cell(v, usPerRecord, "%.2f"), share)
		}
		w("\n")
	}
	if plotPath == "" || len(size)+len(rec) == 0 {
		return nil
	}
	w("![cost curves](%s)\n\n", plotPath[strings.LastIndex(plotPath, "/")+1:])
	return r.plotCurves(plotPath, size, rec)
}

// curveTable writes a row of y per curve (and of perKiB, when not nil), a
// column per x any curve has: "-" where a curve has no point.
func (r *report) curveTable(w func(string, ...any), curves []curve, head string, y, perKiB func(*runResult) float64) {
	var xs []float64
	for _, c := range curves {
		for _, p := range c.points {
			if !slices.Contains(xs, p.x) {
				xs = append(xs, p.x)
			}
		}
	}
	slices.Sort(xs)
	heads := make([]string, len(xs))
	for i, x := range xs {
		heads[i] = fmt.Sprintf(head, x)
	}
	w("| collector | %s |\n|---|%s\n", strings.Join(heads, " | "), strings.Repeat("---|", len(xs)))
	row := func(name string, c curve, f func(*runResult) float64) {
		cells := make([]string, len(xs))
		for i, x := range xs {
			cells[i] = "-"
			for _, p := range c.points {
				if p.x == x {
					cells[i] = r.cell(p.variant, f, "%.2f")
				}
			}
		}
		w("| %s | %s |\n", name, strings.Join(cells, " | "))
	}
	for _, c := range curves {
		row(c.of, c, y)
		if perKiB != nil {
			row(c.of+", per KiB", c, perKiB)
		}
	}
	w("\n")
}

// plotCurves draws µs per record against records per request above µs per
// KiB against bytes per record, both on a logarithmic x axis.
func (r *report) plotCurves(path string, size, rec []curve) error {
	palette := []color.Color{color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}}
	top, bottom := plot.New(), plot.New()
	top.Title.Text = "CPU per record at saturation against the records of a request"
	top.X.Label.Text, top.Y.Label.Text = "records a request", "µs per record"
	bottom.Title.Text = "CPU per KiB at saturation against the size of a record"
	bottom.X.Label.Text, bottom.Y.Label.Text = "bytes a record (OTLP protobuf)", "µs per KiB"
	for _, panel := range []struct {
		p      *plot.Plot
		curves []curve
		y      func(*runResult) float64
	}{{top, size, usPerRecord}, {bottom, rec, usPerKiB}} {
		panel.p.Y.Min = 0 // a ratio reads true only from zero
		panel.p.X.Scale = plot.LogScale{}
		panel.p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		for i, c := range panel.curves {
			xys := make(plotter.XYs, len(c.points))
			for j, p := range c.points {
				xys[j] = plotter.XY{X: p.x, Y: r.median(p.variant, panel.y)}
			}
			l, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			l.Color, pts.Color = palette[i%len(palette)], palette[i%len(palette)]
			l.Width = vg.Points(1.2)
			panel.p.Add(l, pts)
			panel.p.Legend.Add(c.of, l, pts)
		}
	}
	return writeStacked(path, top, bottom)
}
