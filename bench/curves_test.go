// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The curves group each collector's shaped variants in x order, leave out
// collectors with one point, and the report gives each point's median and
// each added backend's share.
func TestCurves(t *testing.T) {
	old := *variantList
	t.Cleanup(func() { *variantList = old })
	*variantList = "floor-klauspost,floor-klauspost-req10,gateway-req10,gateway-req100,gateway,gateway-body16k,gateway-body200,gateway-vendor,gateway-backends4,upstream"
	r := &report{}
	for _, x := range []struct {
		v          string
		us, rbytes float64
	}{
		{"floor-klauspost", 5, 1000}, {"floor-klauspost-req10", 7, 1000},
		{"gateway-req10", 40, 1000}, {"gateway-req100", 16, 1000}, {"gateway", 14, 1000}, {"gateway", 12, 1000}, {"gateway", 13, 1000},
		{"gateway-body16k", 160, 16500}, {"gateway-body200", 6, 330},
		{"gateway-vendor", 19, 1000}, {"gateway-backends4", 29, 1000}, {"upstream", 20, 1000},
	} {
		r.Runs = append(r.Runs, &runResult{Variant: x.v, SatCPUsPerM: x.us, SatRecordBytes: x.rbytes})
	}
	size := r.curves(false)
	if got := fmt.Sprint(size); got != "[{floor-klauspost [{floor-klauspost-req10 10} {floor-klauspost 1000}]} {gateway [{gateway-req10 10} {gateway-req100 100} {gateway 1000}]}]" {
		t.Errorf("request-size curves: %s", got)
	}
	if got := fmt.Sprint(r.curves(true)); got != "[{gateway [{gateway-body200 330} {gateway 1000} {gateway-body16k 16500}]}]" {
		t.Errorf("record-size curves: %s", got)
	}
	var b strings.Builder
	plotPath := filepath.Join(t.TempDir(), "x-cost.png")
	if err := r.writeCurves(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, plotPath); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| collector | 10 a request | 100 a request | 1000 a request |",
		"| floor-klauspost | 7.00 | - | 5.00 |",
		"| gateway | 40.00 | 16.00 | 13.00 [12.00–14.00] |",
		"| gateway, per KiB | 18.62 | 13.31 [12.29–14.34] | 9.93 |",
		"| gateway-backends4 | 4 | 29.00 | 5.33 µs (41% of one backend's gateway) |",
		"- gateway: about 273 µs a request plus 12.7 µs a record (from its 10- and 1000-record points)",
		"![cost curves](x-cost.png)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if st, err := os.Stat(plotPath); err != nil || st.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
}

// A shape's log lines are exactly as long as it says, its records numbered
// on from the steady phase, and a longer line means fewer records.
func TestEncodePhasesShapes(t *testing.T) {
	p := encodePhases(loadShape{perRequest: 10, bodyBytes: 4096}, 2000, 40000, []string{fixtureNamespace})
	// 4 KiB lines: a quarter of the records (2000 and 40000 scaled by
	// 1000/4096), the steady phase's requests a quarter as large (24 records)
	if len(p.steady) != 20 || p.steady[0].N != 24 || len(p.sat) != 976 || p.sat[0].N != 10 {
		t.Fatalf("steady %d requests of %d, saturation %d of %d: want 20 of 24 and 976 of 10", len(p.steady), p.steady[0].N, len(p.sat), p.sat[0].N)
	}
	if p.sat[0].First != 480 {
		t.Errorf("saturation starts at record %d, want 480", p.sat[0].First)
	}
	if big := encodePhases(loadShape{bodyBytes: 16 << 10}, 2000, 40000, []string{fixtureNamespace}); big.sat[0].N != 61 {
		t.Errorf("16 KiB lines: saturation requests of %d records, want 61 (about 1 MB)", big.sat[0].N)
	}
	ld := decodeChunk(t, p.sat[0])
	lr := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(3)
	line, _ := lr.Body().Map().Get("log")
	if n := len(line.Str()); n != 4096 {
		t.Errorf("log line of %d bytes, want 4096", n)
	}
	if !strings.Contains(line.Str(), "seq=483 ") {
		t.Errorf("log line does not keep its flow line: %.120s", line.Str())
	}
	if line.Type() != pcommon.ValueTypeStr || strings.Count(line.Str(), "x") > 1000 {
		t.Errorf("log line is padding, not words: %.200s", line.Str())
	}
	def := encodePhases(loadShape{}, 2000, 40000, []string{fixtureNamespace})
	if len(def.sat) != 40 || def.sat[0].N != 1000 || def.rate != *steadyRate {
		t.Errorf("default shape: %d requests of %d at %.0f/s", len(def.sat), def.sat[0].N, def.rate)
	}
}
