// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

func logsReq(t testing.TB, start, n int) *wireRequest {
	r, err := logsFromPdata(makeLogs(start, n))
	require.NoError(t, err)
	return r
}

// decodeAll decodes what a request would send.
func decodeAll(t testing.TB, r xexporterhelper.Request) plog.Logs {
	wr := r.(*wireRequest)
	req := plogotlp.NewExportRequest()
	require.NoError(t, req.UnmarshalProto(bytes.Join(wr.chunks, nil)))
	require.Equal(t, wr.items, req.Logs().LogRecordCount(), "ItemsCount matches the bytes")
	require.Len(t, bytes.Join(wr.chunks, nil), wr.bytes, "BytesSize matches the bytes")
	return req.Logs()
}

func TestMergeSplitProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, szt := range []exporterhelper.RequestSizerType{exporterhelper.RequestSizerTypeItems, exporterhelper.RequestSizerTypeBytes, exporterhelper.RequestSizerTypeRequests} {
		t.Run(szt.String(), func(t *testing.T) {
			for range 150 {
				n1, n2 := rng.IntN(300), 1+rng.IntN(3000)
				a, b := logsReq(t, 0, n1), logsReq(t, n1, n2)
				// a may itself be a merge of several chunks
				if n1 > 0 && rng.IntN(2) == 0 {
					h := n1 / 2
					a = logsReq(t, 0, h)
					a.appendFrom(logsReq(t, h, n1-h))
				}
				aChunks := bytes.Join(a.chunks, nil)
				bChunks := bytes.Join(b.chunks, nil)
				maxSize := 0
				switch szt {
				case exporterhelper.RequestSizerTypeItems:
					maxSize = []int{0, 1, 7, 100, 2000, 5000}[rng.IntN(6)]
				case exporterhelper.RequestSizerTypeBytes:
					maxSize = []int{0, 1000, 4096, 65536, 1 << 20}[rng.IntN(5)]
				}
				res, err := a.MergeSplit(context.Background(), maxSize, szt, b)
				require.NoError(t, err)
				require.NotEmpty(t, res)
				var seqs []int64
				for i, r := range res {
					seqs = append(seqs, seqsOf(decodeAll(t, r))...)
					require.Positive(t, r.ItemsCount(), "no empty request")
					if maxSize > 0 && szt == exporterhelper.RequestSizerTypeItems {
						require.LessOrEqual(t, r.ItemsCount(), maxSize)
						require.LessOrEqual(t, res[len(res)-1].ItemsCount(), r.ItemsCount(), "last not larger than piece %d", i)
						if i < len(res)-1 {
							require.Equal(t, maxSize, r.ItemsCount(), "every piece but the last is full")
						}
					}
					if maxSize > 0 && szt == exporterhelper.RequestSizerTypeBytes {
						require.LessOrEqual(t, r.BytesSize(), maxSize)
					}
				}
				require.Equal(t, seqRange(0, n1+n2), seqs, "every record once, in order")
				// the bytes are shared, never written: every piece is a view
				require.Equal(t, bChunks, bytes.Join(b.chunks, nil), "bytes not modified")
				if len(res) > 1 {
					require.Equal(t, aChunks, bytes.Join(a.chunks, nil), "a split leaves its inputs as they were")
					require.Equal(t, n1, a.items)
				}
			}
		})
	}
}

// A fluent-bit chunk of 24,000 records with max_size 2000 becomes 12 requests.
func TestSplitLargeChunk(t *testing.T) {
	r := logsReq(t, 0, 24000)
	res, err := r.MergeSplit(context.Background(), 2000, exporterhelper.RequestSizerTypeItems, nil)
	require.NoError(t, err)
	require.Len(t, res, 12)
	var seqs []int64
	for _, p := range res {
		seqs = append(seqs, seqsOf(decodeAll(t, p))...)
	}
	assert.Equal(t, seqRange(0, 24000), seqs)
}

func TestSplitDropsARecordLargerThanMaxBytes(t *testing.T) {
	ld := makeLogs(0, 3)
	ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(1).Body().SetStr(string(make([]byte, 5000)))
	r, err := logsFromPdata(ld)
	require.NoError(t, err)
	before := bytes.Clone(r.chunks[0])
	res, err := r.MergeSplit(context.Background(), 1000, exporterhelper.RequestSizerTypeBytes, nil)
	require.ErrorContains(t, err, "1 log records larger than the batch max_size 1000, dropped")
	assert.Equal(t, before, r.chunks[0], "no mutation on error")
	assert.Equal(t, 3, r.items)
	var seqs []int64
	for _, p := range res {
		seqs = append(seqs, seqsOf(decodeAll(t, p))...)
	}
	assert.Equal(t, []int64{0, 2}, seqs)
}

func TestMergeRefusesAnotherSignal(t *testing.T) {
	m, err := metricsFromPdata(makeMetrics(5, 3))
	require.NoError(t, err)
	l := logsReq(t, 0, 3)
	_, err = l.MergeSplit(context.Background(), 0, exporterhelper.RequestSizerTypeItems, m)
	require.ErrorContains(t, err, "cannot merge")
	assert.Equal(t, 3, l.items)
}

func makeMetrics(metrics, points int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	v := 0
	for i := range metrics {
		m := sm.Metrics().AppendEmpty()
		m.SetName("m" + string(rune('a'+i)))
		var add func() pmetric.NumberDataPoint
		switch i % 3 {
		case 0:
			add = m.SetEmptyGauge().DataPoints().AppendEmpty
		case 1:
			s := m.SetEmptySum()
			s.SetIsMonotonic(true)
			s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			add = s.DataPoints().AppendEmpty
		case 2:
			h := m.SetEmptyHistogram()
			h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
			for range points {
				h.DataPoints().AppendEmpty().SetCount(uint64(v))
				v++
			}
			continue
		}
		for range points {
			add().SetIntValue(int64(v))
			v++
		}
	}
	return md
}

// Metrics split by data point, a metric's identity kept in every piece.
func TestSplitMetricsByDataPoint(t *testing.T) {
	md := makeMetrics(4, 5)
	r, err := metricsFromPdata(md)
	require.NoError(t, err)
	res, err := r.MergeSplit(context.Background(), 3, exporterhelper.RequestSizerTypeItems, nil)
	require.NoError(t, err)
	require.Len(t, res, 7)
	got := pmetric.NewMetrics()
	for _, p := range res {
		req := pmetricotlp.NewExportRequest()
		require.NoError(t, req.UnmarshalProto(bytes.Join(p.(*wireRequest).chunks, nil)))
		require.LessOrEqual(t, req.Metrics().DataPointCount(), 3)
		req.Metrics().ResourceMetrics().MoveAndAppendTo(got.ResourceMetrics())
	}
	// Re-assemble points per metric name in order and compare with the input.
	want := map[string][]string{}
	collect := func(md pmetric.Metrics, into map[string][]string) {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					key := m.Name() + "/" + m.Type().String()
					if m.Type() == pmetric.MetricTypeSum {
						key += "/" + m.Sum().AggregationTemporality().String()
					}
					if m.Type() == pmetric.MetricTypeHistogram {
						key += "/" + m.Histogram().AggregationTemporality().String()
						for _, dp := range m.Histogram().DataPoints().All() {
							into[key] = append(into[key], string(rune(dp.Count())))
						}
						continue
					}
					var dps pmetric.NumberDataPointSlice
					if m.Type() == pmetric.MetricTypeGauge {
						dps = m.Gauge().DataPoints()
					} else {
						dps = m.Sum().DataPoints()
					}
					for _, dp := range dps.All() {
						into[key] = append(into[key], string(rune(dp.IntValue())))
					}
				}
			}
		}
	}
	collect(md, want)
	gotPoints := map[string][]string{}
	collect(got, gotPoints)
	assert.Equal(t, want, gotPoints)
}
