// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// variants lists the variants that have runs, in -variants order; without the
// floor unless withFloor.
func (r *report) variants(withFloor bool) []string {
	var out []string
	for _, v := range strings.Split(*variantList, ",") {
		if (!isFloor(v) || withFloor) && len(r.values(v, func(*runResult) float64 { return 0 })) > 0 {
			out = append(out, v)
		}
	}
	return out
}

// writeDurability writes the price of durability: each variant's
// CPU per record against the in-memory gateway, its share of the floor, its
// records per CPU-second and RSS against upstream defaults, and where a
// record's CPU goes at saturation.
func (r *report) writeDurability(w func(string, ...any)) {
	mem := func(f func(*runResult) float64) float64 { return r.median("gateway-memory", f) }
	up := func(f func(*runResult) float64) float64 { return r.median("upstream", f) }
	steady := func(x *runResult) float64 { return x.SteadyCPUsPerM }
	sat := func(x *runResult) float64 { return x.SatCPUsPerM }
	perCore := func(x *runResult) float64 { return x.SatPerCore }
	rss := func(x *runResult) float64 { return x.SteadyRSSPeak }
	floor := r.median("floor", perCore)
	cols := r.variants(false)
	if mem(steady) > 0 && up(perCore) > 0 {
		w("## The price of durability (ratios of the medians above)\n\n")
		w("| variant | CPU per record at %.0f/s vs gateway-memory (≤ 1.15) | at saturation vs gateway-memory (≤ 1.15) | share of the floor at saturation (≥ 60%%) | records per CPU-second vs upstream (≥ 1) | RSS peak at %.0f/s vs upstream (≤ 1.1) |\n|---|---|---|---|---|---|\n", *steadyRate, *steadyRate)
		for _, v := range cols {
			w("| %s | %.2fx | %.2fx | %.0f%% | %.2fx | %.2fx |\n", v,
				r.median(v, steady)/mem(steady), r.median(v, sat)/mem(sat),
				100*r.median(v, perCore)/max(floor, 1), r.median(v, perCore)/up(perCore), r.median(v, rss)/up(rss))
		}
		w("\n")
	}
	// Paired ratios need only the in-memory gateway: a run of gateway
	// variants alone is the tightest measurement of the price of durability.
	if mem(steady) > 0 {
		r.writePaired(w, cols, "gateway-memory", "The price of durability paired by round", steady, sat)
	}
	// Against upstream, paired the same way: on a machine shared with other
	// work this is the figure one run can give, where the absolute ones move
	// with the neighbours' load.
	if up(steady) > 0 {
		r.writePaired(w, cols, "upstream", "Against upstream's defaults paired by round", steady, sat)
	}

	r.writeCost(w, cols, steady, sat)

	r.writeAttribution(w, cols, "saturation", "at saturation", sat)
	r.writeAttribution(w, cols, "steady", fmt.Sprintf("at %.0f records/s", *steadyRate), steady)
}

// writeAttribution writes the table of where a record's CPU goes in one
// phase, from the last run's CPU profile of each variant.
func (r *report) writeAttribution(w func(string, ...any), cols []string, phase, title string, perRecord func(*runResult) float64) {
	w("## Where a record's CPU goes %s (last run's 10 s CPU profile, from 2 s into the phase)\n\n", title)
	w("Each sample goes to the first category any frame of its stack matches, in this order: GC (background marking and allocation assists), gzip, TLS, read back (the persistent queue's Read: storage get, metadata write, decode of the item), persist (Offer: encode and storage write; onDone: delete), batch merge, encode (exporter), decode (receiver), processors, network/HTTP/syscalls. µs per record = share × CPU-seconds per record (median). A steady phase shorter than 12 s leaves the end of its profile idle.\n\n")
	var cats []string
	for _, c := range categories {
		cats = append(cats, c.name)
	}
	cats = append(cats, otherCategory)
	shares := map[string]map[string]float64{}
	for _, v := range cols {
		sh, err := attribute(profilePath(v, phase, "pprof"))
		if err == nil {
			shares[v] = sh
		}
	}
	w("| category |")
	for _, v := range cols {
		w(" %s |", v)
	}
	w("\n|---|%s\n", strings.Repeat("---|", len(cols)))
	for _, c := range cats {
		w("| %s |", c)
		for _, v := range cols {
			sh, ok := shares[v]
			if !ok {
				w(" - |")
				continue
			}
			w(" %.1f%% (%.1f µs) |", 100*sh[c], sh[c]*r.median(v, perRecord))
		}
		w("\n")
	}
	w("| total CPU per record |")
	for _, v := range cols {
		w(" %.1f µs |", r.median(v, perRecord))
	}
	w("\n\n")
}

// pairedRatios returns, for each round in which both ran, v's figure over
// base's. The runs of a round are minutes apart and interleaved, so a drift of
// the machine's speed between rounds (a neighbour's load, CPU frequency)
// moves both alike and cancels out of the ratio, where a ratio of two medians
// may take them from different rounds.
func (r *report) pairedRatios(v, base string, f func(*runResult) float64) []float64 {
	a, b := r.values(v, f), r.values(base, f)
	var out []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

// writePaired writes each variant's CPU per record over base's as the median
// [min-max] of the per-round ratios, with how sure that median is.
func (r *report) writePaired(w func(string, ...any), cols []string, base, title string, steady, sat func(*runResult) float64) {
	w("%s (each run against the %s run of its own round), median [min–max], and the 95%% interval of that median from %d bootstrap resamples of the rounds (5 rounds or more):\n\n", title, base, resamples)
	w("| variant | CPU per record at %.0f/s vs %s | its median's interval | at saturation vs %s | its median's interval |\n|---|---|---|---|---|\n", *steadyRate, base, base)
	for _, v := range cols {
		if v == base {
			continue
		}
		st, sa := r.pairedRatios(v, base, steady), r.pairedRatios(v, base, sat)
		w("| %s | %s | %s | %s | %s |\n", v, ratioCell(st), intervalCell(st), ratioCell(sa), intervalCell(sa))
	}
	w("\n")
}

// writeCost writes what each variant costs over the shipped gateway, per
// record, paired by round: for a run of variants that each add one piece of
// processing to the gateway (bench/variants), each piece's own price. Only
// when such a variant ran: the default set has its own tables above.
func (r *report) writeCost(w func(string, ...any), cols []string, steady, sat func(*runResult) float64) {
	var others []string
	for _, v := range cols {
		if strings.HasPrefix(v, "gateway-") && v != "gateway-memory" {
			others = append(others, v)
		}
	}
	if len(others) == 0 || r.median("gateway", sat) == 0 {
		return
	}
	w("\n## What each variant costs over the gateway, paired by round\n\n")
	w("CPU per record of each run minus that of the gateway run of its own round, in µs (CPU-seconds per million records), median [min–max], with the 95%% interval of that median from %d bootstrap resamples of the rounds (5 rounds or more); then the same runs as a ratio. Records per CPU-second at saturation are the inverse of the last columns' figures.\n\n", resamples)
	w("| variant | CPU per record at %.0f/s, µs | minus gateway's, µs | its median's interval | at saturation, µs | minus gateway's, µs | its median's interval | at saturation vs gateway | its median's interval |\n|---|---|---|---|---|---|---|---|---|\n", *steadyRate)
	for _, v := range append([]string{"gateway"}, others...) {
		if v == "gateway" {
			w("| gateway | %s | - | - | %s | - | - | 1.00x | - |\n", r.cell(v, steady, "%.1f"), r.cell(v, sat, "%.1f"))
			continue
		}
		ds, dt, rt := r.pairedDiffs(v, "gateway", steady), r.pairedDiffs(v, "gateway", sat), r.pairedRatios(v, "gateway", sat)
		w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v, r.cell(v, steady, "%.1f"), diffCell(ds), intervalCellf(ds, "%+.1f"),
			r.cell(v, sat, "%.1f"), diffCell(dt), intervalCellf(dt, "%+.1f"), ratioCell(rt), intervalCell(rt))
	}
	w("\n")
}

// pairedDiffs returns, for each round in which both ran, v's figure minus
// base's (pairedRatios' differences).
func (r *report) pairedDiffs(v, base string, f func(*runResult) float64) []float64 {
	a, b := r.values(v, f), r.values(base, f)
	var out []float64
	for i := range min(len(a), len(b)) {
		out = append(out, a[i]-b[i])
	}
	return out
}

// diffCell is "median [min–max]" of differences, signed, "-" without any.
func diffCell(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	v = slices.Sorted(slices.Values(v))
	return fmt.Sprintf("%+.1f [%+.1f–%+.1f]", v[len(v)/2], v[0], v[len(v)-1])
}

// resamples is how many bootstrap medians intervalCell draws.
const resamples = 4000

// intervalCell is the 95% interval of the median of v: the 2.5th and 97.5th
// percentiles of the medians of resamples of v drawn with replacement. On
// this shared machine a single ratio of medians moved by 0.3 between runs of
// the same build; the interval says how much one run can tell. Seeded, so
// the report is reproducible from its runs.
func intervalCell(v []float64) string { return intervalCellf(v, "%.2f") }

// intervalCellf is intervalCell with its bounds in format.
func intervalCellf(v []float64, format string) string {
	if len(v) < 5 {
		return "-"
	}
	rng := rand.New(rand.NewPCG(uint64(len(v)), 15))
	meds := make([]float64, resamples)
	s := make([]float64, len(v))
	for i := range meds {
		for j := range s {
			s[j] = v[rng.IntN(len(v))]
		}
		slices.Sort(s)
		meds[i] = s[len(s)/2]
	}
	slices.Sort(meds)
	return fmt.Sprintf(format+"–"+format, meds[resamples*25/1000], meds[resamples*975/1000-1])
}

// ratioCell is "median [min–max]" of ratios, "-" without any.
func ratioCell(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	v = slices.Sorted(slices.Values(v))
	return fmt.Sprintf("%.2fx [%.2f–%.2f]", v[len(v)/2], v[0], v[len(v)-1])
}
