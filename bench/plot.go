// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plot draws delivered records/s and RSS over time of the last run of each
// collector variant, one above the other.
func (r *report) plot(path string) error {
	palette := []color.Color{color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}}
	colors := map[string]color.Color{}
	for i, v := range r.variants(false) {
		colors[v] = palette[i%len(palette)]
	}
	last := map[string]*runResult{}
	for _, x := range r.Runs {
		if !isFloor(x.Variant) {
			last[x.Variant] = x
		}
	}
	tp, rss := plot.New(), plot.New()
	tp.Title.Text = fmt.Sprintf("Delivered records/s, 1 s mean (steady %.0f/s, then saturation)", *steadyRate)
	tp.X.Label.Text, tp.Y.Label.Text = "seconds", "records/s"
	rss.Title.Text = "Collector RSS"
	rss.X.Label.Text, rss.Y.Label.Text = "seconds", "MiB"
	for _, v := range r.variants(false) {
		x, ok := last[v]
		if !ok || len(x.Series) == 0 {
			continue
		}
		rate, mem := make(plotter.XYs, len(x.Series)), make(plotter.XYs, len(x.Series))
		for i, p := range x.Series {
			// A one-second trailing mean: the exporter delivers in batches, so
			// 250 ms samples alternate between bursts and nothing.
			sum, n := 0.0, 0
			for j := i; j >= 0 && p.T-x.Series[j].T < 1; j-- {
				sum, n = sum+x.Series[j].Rate, n+1
			}
			rate[i] = plotter.XY{X: p.T, Y: sum / float64(n)}
			mem[i] = plotter.XY{X: p.T, Y: p.RSS}
		}
		for _, pair := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{tp, rate}, {rss, mem}} {
			l, err := plotter.NewLine(pair.xys)
			if err != nil {
				return err
			}
			l.Color = colors[v]
			l.Width = vg.Points(1.2)
			pair.p.Add(l)
			pair.p.Legend.Add(v, l)
		}
	}
	return writeStacked(path, tp, rss)
}

// writeStacked writes top above bottom, x axes aligned, as a PNG.
func writeStacked(path string, top, bottom *plot.Plot) error {
	for _, p := range []*plot.Plot{top, bottom} {
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
	}
	img := vgimg.New(vg.Points(900), vg.Points(700))
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(12), PadY: vg.Points(18)}
	canvases := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, draw.New(img))
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}
