// SPDX-License-Identifier: Apache-2.0

package main

import (
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/otelcol-relay/otelcol-relay/internal/scenario"
)

// soak returns the churn soak's run, if it ran.
func (r *report) soak() *scenarioRun {
	for _, s := range r.Scenarios {
		if s.Soak != nil && len(s.Soak.Cycles) > 0 {
			return s
		}
	}
	return nil
}

// writeSoak writes the churn soak's table (per cycle: backlog, peak disk use,
// disk use and bound once drained) and its plot, <name>-soak.png.
func (r *report) writeSoak(w func(string, ...any), dir string) error {
	run := r.soak()
	if run == nil {
		return nil
	}
	k := run.Soak
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	w("## Churn soak: queue_storage's disk use under churn\n\n")
	w("%.0f records/s for the whole soak while the backend refuses everything for %s, then accepts for at least %s and until every record acknowledged before the recovery has arrived; %d cycles. ", *soakRate, *soakDown, *soakUp, len(k.Cycles))
	w("Sampled every second: the default exporter's logs queue (`otelcol_exporter_queue_size`, bytes sizer: uncompressed OTLP), the disk use of the queue directory and of the logs queue's own directory `%s` as allocated bytes (st_blocks × 512: segments are fallocated, %.0f MiB each), and the gateway's VmRSS. ", k.Client, mib(k.SegmentBytes))
	w("The bound is queue_storage's (its README): a queue's segments take at most 2 × its live data + 2 segments, + 1 while rolling. The soak fails if a queue's directory exceeds it at the end of a drained cycle or at rest, or if the last cycle's peak is more than 1.5x the first's (plus two segments) beyond the growth of its backlog.\n\n")
	w("| cycle | backend down | records acknowledged while down | all arrived after the recovery | peak queue, MiB | peak disk, logs queue, MiB | peak disk, queue directory, MiB | segments created | drained: queued / disk / bound, MiB | peak RSS, MiB |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range k.Cycles {
		w("| %d | %.0f–%.0f s | %d | %.1f s | %.1f | %.1f | %.1f | %d | %.1f / %.1f / %.1f | %.0f |\n", c.N, c.Start.Seconds(), c.Recovered.Seconds(), c.Backlog, c.DrainedAfter.Seconds(),
			c.PeakQueue/(1<<20), mib(c.PeakClient), mib(c.PeakDisk), c.SegmentsCreated, c.End.QueueBytes/(1<<20), mib(c.End.ClientBytes), mib(c.EndBound), mib(c.PeakRSS))
	}
	w("| at rest | | | | | | | | %.1f / %.1f / %.1f | |\n\n", max(k.Rest.QueueBytes, 0)/(1<<20), mib(k.Rest.ClientBytes), mib(k.Bound(0)))
	w("At rest after the last drain: the logs queue holds %d segment(s), %.1f MiB (%d created and %d reclaimed over the soak); the queue directory, every signal's queue, %.1f MiB. Records missing %d of %d acknowledged, %d duplicated. The highest disk use against the bound in any sample was %.2fx.",
		k.Rest.Segments, mib(k.Rest.ClientBytes), k.Rest.LastSegment, int(k.Rest.LastSegment)-k.Rest.Segments, mib(k.Rest.DiskBytes), run.Missing, run.Acked, run.Duplicated, k.MaxRatio)
	if run.Err != "" {
		w(" **Failed**: %s", run.Err)
	}
	w("\n\n![queue size and disk use over time](%s-soak.png)\n\n", r.Name)
	return plotSoak(k, filepath.Join(dir, r.Name+"-soak.png"))
}

// plotSoak draws the logs queue's size, the disk use of its directory and of
// the whole queue directory, and the bound, over the outages (shaded); RSS
// below.
func plotSoak(k *scenario.Soak, path string) error {
	mib := func(b float64) float64 { return b / (1 << 20) }
	var queue, client, total, bound, rss plotter.XYs
	top := 0.0
	for _, s := range k.Samples {
		x := s.At.Seconds()
		if s.QueueBytes >= 0 {
			queue = append(queue, plotter.XY{X: x, Y: mib(s.QueueBytes)})
			bound = append(bound, plotter.XY{X: x, Y: mib(float64(k.Bound(s.QueueBytes)))})
		}
		client = append(client, plotter.XY{X: x, Y: mib(float64(s.ClientBytes))})
		total = append(total, plotter.XY{X: x, Y: mib(float64(s.DiskBytes))})
		rss = append(rss, plotter.XY{X: x, Y: mib(float64(s.RSS))})
		top = max(top, mib(float64(s.DiskBytes)), mib(float64(k.Bound(s.QueueBytes))))
	}
	disk, mem := plot.New(), plot.New()
	ymax := top * 1.45 // room for the legend above the lines
	disk.Y.Min, disk.Y.Max = 0, ymax
	disk.Title.Text = "Persistent queue under churn: logs queue size and disk use (allocated)"
	disk.X.Label.Text, disk.Y.Label.Text = "seconds", "MiB"
	mem.Title.Text = "Gateway RSS"
	mem.X.Label.Text, mem.Y.Label.Text = "seconds", "MiB"
	for _, c := range k.Cycles {
		x0, x1 := c.Start.Seconds(), c.Recovered.Seconds()
		shade, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: ymax}, {X: x0, Y: ymax}})
		if err != nil {
			return err
		}
		shade.Color = color.RGBA{R: 0xee, G: 0xee, B: 0xee, A: 0xff}
		shade.LineStyle.Width = 0
		disk.Add(shade)
		if c.N == 1 {
			disk.Legend.Add("backend down", shade)
		}
	}
	lines := []struct {
		p      *plot.Plot
		name   string
		xys    plotter.XYs
		c      color.Color
		dashed bool
	}{
		{disk, "logs queue size (otelcol_exporter_queue_size)", queue, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, false},
		{disk, "disk: logs queue directory", client, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, false},
		{disk, "disk: whole queue directory", total, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, false},
		{disk, "bound: 2 x queue + 3 segments", bound, color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, true},
		{mem, "VmRSS", rss, color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, false},
	}
	for _, l := range lines {
		if len(l.xys) == 0 {
			continue
		}
		ln, err := plotter.NewLine(l.xys)
		if err != nil {
			return err
		}
		ln.Color = l.c
		ln.Width = vg.Points(1.2)
		if l.dashed {
			ln.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		l.p.Add(ln)
		l.p.Legend.Add(l.name, ln)
	}
	return writeStacked(path, disk, mem)
}
