// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	pdatareq "go.opentelemetry.io/collector/pdata/xpdata/request"
)

// allSignals is a function: the signals are made by init, after package variables.
func allSignals() []*signal { return []*signal{logsSignal, metricsSignal, tracesSignal} }

// pdataCount decodes b as sig's Export<Signal>ServiceRequest with pdata and
// counts its items as ItemsCount does.
func pdataCount(sig *signal, b []byte) (int, error) {
	switch sig {
	case logsSignal:
		req := plogotlp.NewExportRequest()
		err := req.UnmarshalProto(b)
		return req.Logs().LogRecordCount(), err
	case metricsSignal:
		req := pmetricotlp.NewExportRequest()
		err := req.UnmarshalProto(b)
		return req.Metrics().DataPointCount(), err
	default:
		req := ptraceotlp.NewExportRequest()
		err := req.UnmarshalProto(b)
		return req.Traces().SpanCount(), err
	}
}

// randomRequest is a request of sig with varied shape: empty and non-empty
// resources and scopes, every metric type, records of varied size.
func randomRequest(t testing.TB, rng *rand.Rand, sig *signal) *wireRequest {
	var (
		r   *wireRequest
		err error
	)
	str := func() string { return string(bytes.Repeat([]byte{'x'}, rng.IntN(300))) }
	switch sig {
	case logsSignal:
		ld := plog.NewLogs()
		for range rng.IntN(4) {
			rl := ld.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("k", str())
			for range rng.IntN(4) {
				sl := rl.ScopeLogs().AppendEmpty()
				sl.Scope().SetName(str())
				for range rng.IntN(20) {
					lr := sl.LogRecords().AppendEmpty()
					lr.Body().SetStr(str())
					lr.SetTimestamp(pcommon.Timestamp(rng.Uint64()))
				}
			}
		}
		r, err = logsFromPdata(ld)
	case tracesSignal:
		td := ptrace.NewTraces()
		for range rng.IntN(4) {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("k", str())
			for range rng.IntN(4) {
				ss := rs.ScopeSpans().AppendEmpty()
				for range rng.IntN(20) {
					s := ss.Spans().AppendEmpty()
					s.SetName(str())
					s.Events().AppendEmpty().SetName(str())
				}
			}
		}
		r, err = tracesFromPdata(td)
	default:
		md := pmetric.NewMetrics()
		for range rng.IntN(4) {
			sms := md.ResourceMetrics().AppendEmpty().ScopeMetrics()
			for range rng.IntN(4) {
				ms := sms.AppendEmpty().Metrics()
				for range rng.IntN(8) {
					m := ms.AppendEmpty()
					m.SetName(str())
					points := rng.IntN(6)
					switch rng.IntN(6) {
					case 0:
						for range points {
							m.SetEmptyGauge().DataPoints().AppendEmpty().SetDoubleValue(rng.Float64())
						}
					case 1:
						s := m.SetEmptySum()
						for range points {
							s.DataPoints().AppendEmpty().SetIntValue(rng.Int64())
						}
					case 2:
						h := m.SetEmptyHistogram()
						for range points {
							h.DataPoints().AppendEmpty().BucketCounts().FromRaw([]uint64{1, 2, 3})
						}
					case 3:
						h := m.SetEmptyExponentialHistogram()
						for range points {
							h.DataPoints().AppendEmpty().Positive().BucketCounts().FromRaw([]uint64{4})
						}
					case 4:
						s := m.SetEmptySummary()
						for range points {
							s.DataPoints().AppendEmpty().QuantileValues().AppendEmpty().SetQuantile(0.5)
						}
					case 5: // no data
					}
				}
			}
		}
		r, err = metricsFromPdata(md)
	}
	require.NoError(t, err)
	return r
}

func TestQueueEncodingRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sig := range allSignals() {
		t.Run(sig.name, func(t *testing.T) {
			enc := queueEncoding{sig: sig}
			for range 100 {
				r := randomRequest(t, rng, sig)
				if rng.IntN(3) == 0 {
					r.appendFrom(randomRequest(t, rng, sig))
				}
				b, err := enc.Marshal(context.Background(), r)
				require.NoError(t, err)
				require.Equal(t, []byte{upstreamTag, upstreamVersion, 0, 0, 0}, b[:5], "upstream's format, version 1")
				_, back, err := enc.Unmarshal(b)
				require.NoError(t, err)
				assert.Equal(t, r.items, back.ItemsCount())
				assert.Equal(t, r.bytes, back.BytesSize())
				want := bytes.Join(r.chunks, nil)
				got := bytes.Join(back.(*wireRequest).chunks, nil)
				require.Equal(t, want, got, "the same OTLP bytes")
				if r.bytes > 0 {
					// no copy on read: the request's bytes are the stored bytes
					l, ok := splitItem(b)
					require.True(t, ok)
					assert.Same(t, &b[l.dataFrom], &back.(*wireRequest).chunks[0][0])
				}
				// read back and stored again (a restart re-queues the items
				// in flight): the item itself, uncopied
				again, err := enc.Marshal(context.Background(), back)
				require.NoError(t, err)
				assert.Same(t, &b[0], &again[0])
			}
		})
	}
}

func TestCountItemsAgreesWithPdata(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, sig := range allSignals() {
		for range 300 {
			b := bytes.Join(randomRequest(t, rng, sig).chunks, nil)
			want, err := pdataCount(sig, b)
			require.NoError(t, err)
			got, err := sig.count(b)
			require.NoError(t, err, sig.name)
			require.Equal(t, want, got, sig.name)
			// unknown fields of every wire type, anywhere at the top level
			u := append(unknownFields(), b...)
			u = append(u, unknownFields()...)
			want, err = pdataCount(sig, u)
			require.NoError(t, err)
			got, err = sig.count(u)
			require.NoError(t, err, sig.name)
			require.Equal(t, want, got, sig.name)
		}
	}
}

// unknownFields is one field 20..25 of each wire type, a nested group
// included. The groups hold only groups: pdata's proto.ConsumeUnknown returns
// from a group after its first non-group field (and then refuses the group's
// end tag), and the counter does as pdata does.
func unknownFields() []byte {
	var b []byte
	tag := func(f, wt int) { b = binary.AppendUvarint(b, uint64(f<<3|wt)) }
	tag(20, wtVarint)
	b = binary.AppendUvarint(b, 1<<40)
	tag(21, wtI64)
	b = append(b, 1, 2, 3, 4, 5, 6, 7, 8)
	tag(22, wtI32)
	b = append(b, 1, 2, 3, 4)
	tag(23, wtLen)
	b = append(b, 3, 'a', 'b', 'c')
	tag(24, wtStartGroup)
	tag(2, wtStartGroup)
	tag(2, wtEndGroup)
	tag(24, wtEndGroup)
	// pdata refuses a group's end tag as the last byte of a message: end on a varint
	tag(25, wtVarint)
	b = append(b, 7)
	return b
}

// msg is a length-delimited field.
func msg(field int, body ...[]byte) []byte {
	b := binary.AppendUvarint(nil, uint64(field<<3|wtLen))
	joined := bytes.Join(body, nil)
	b = binary.AppendUvarint(b, uint64(len(joined)))
	return append(b, joined...)
}

// The deprecated scope field (1000) counts only without field 2, and a
// metric's last data field is the one counted, as pdata decodes them.
func TestCountItemsFollowsPdatasRules(t *testing.T) {
	rec := msg(2) // an empty log record / span
	scope := func(n int) []byte { return msg(2, bytes.Repeat(rec, n)) }
	deprecated := func(n int) []byte { return msg(1000, bytes.Repeat(rec, n)) }
	for name, b := range map[string][]byte{
		"deprecated only":     msg(1, deprecated(3), deprecated(2)),
		"both":                msg(1, deprecated(3), scope(2)),
		"both, several":       bytes.Join([][]byte{msg(1, scope(1), deprecated(4)), msg(1, deprecated(5))}, nil),
		"empty scope and old": msg(1, msg(2), deprecated(4)),
	} {
		for _, sig := range []*signal{logsSignal, tracesSignal} {
			want, err := pdataCount(sig, b)
			require.NoError(t, err, name)
			got, err := sig.count(b)
			require.NoError(t, err, name)
			assert.Equal(t, want, got, "%s %s", sig.name, name)
		}
	}
	points := func(field, n int) []byte { return msg(field, bytes.Repeat(msg(1), n)) }
	metric := func(data ...[]byte) []byte { return msg(2, data...) }
	for name, b := range map[string][]byte{
		"gauge then sum":       msg(1, msg(2, metric(points(5, 3), points(7, 2)))),
		"summary then histo":   msg(1, msg(2, metric(points(11, 4), points(9, 1)), metric(points(10, 6)))),
		"sum twice":            msg(1, msg(2, metric(points(7, 4), points(7, 1)))),
		"deprecated scopes":    msg(1, msg(1000, metric(points(5, 3))), msg(1000, metric(points(9, 2)))),
		"metric without data":  msg(1, msg(2, metric(), metric(points(5, 2)))),
		"empty exp histograms": msg(1, msg(2, metric(points(10, 0)))),
	} {
		want, err := pdataCount(metricsSignal, b)
		require.NoError(t, err, name)
		got, err := metricsSignal.count(b)
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
	}
}

func TestCountItemsRefusesMalformedBytes(t *testing.T) {
	valid := bytes.Join(logsReq(t, 0, 3).chunks, nil)
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"truncated", valid[:len(valid)-5], "runs past the end of its message"},
		{"truncated tag", append(append([]byte{}, valid...), 0x80), "truncated varint at offset"},
		{"bad varint", append([]byte{bareTag}, bytes.Repeat([]byte{0xff}, 11)...), "varint longer than 10 bytes at offset 1"},
		{"wrong wire type", []byte{0x08, 0x01}, "field 1 has wire type 0, want 2 (length-delimited) at offset 0"},
		{"wrong wire type nested", msg(1, []byte{0x10, 0x01}), "field 2 has wire type 0, want 2 (length-delimited) at offset 2"},
		{"length past the end", []byte{bareTag, 0x05, 0x00}, "length 5 runs past the end of its message (1 bytes left) at offset 1"},
		{"length past the enclosing message", append(msg(1, []byte{0x12, 0x04, 0, 0}), 0, 0, 0), "length 4 runs past the end of its message (2 bytes left) at offset 3"},
		{"huge length", append([]byte{bareTag}, binary.AppendUvarint(nil, 1<<63)...), "runs past the end"},
		{"invalid wire type", []byte{0x16, 0x00}, "invalid wire type 6 at offset 1"},
		{"end group alone", []byte{0x14, 0x00}, "end of group without a start at offset 1"},
		{"unterminated group", []byte{0x13, 0x13}, "field value missing at the end of its message"},
		{"field 0", []byte{0x02, 0x00}, "invalid field number 0 at offset 0"},
		{"truncated fixed64", []byte{0x11, 1, 2}, "truncated 8-byte value at offset 1"},
	} {
		for _, sig := range allSignals() {
			_, err := pdataCount(sig, tc.b)
			require.Error(t, err, "pdata refuses %s too", tc.name)
			_, err = sig.count(tc.b)
			require.Error(t, err, tc.name)
			assert.Contains(t, err.Error(), tc.want, tc.name)
		}
	}
	// Unmarshal names the signal, the size and what is wrong.
	_, _, err := queueEncoding{sig: metricsSignal}.Unmarshal([]byte{bareTag, 0x05, 0x00})
	require.EqualError(t, err, "otlp_http_wire: metrics queue item (3 bytes) is not a valid ExportMetricsServiceRequest: length 5 runs past the end of its message (1 bytes left) at offset 1")
}

func TestQueueEncodingRefusesBadBytes(t *testing.T) {
	enc := queueEncoding{sig: logsSignal}
	for name, b := range map[string][]byte{
		"empty":          nil,
		"garbage":        []byte("\xff\xff\xff\xff not a protobuf"),
		"corrupt header": {wireFormatV1, 0xff},
		"too many items": {wireFormatV1, 100, 0x0a, 0x00},
		"no bytes":       {wireFormatV1, 1},
		"bare truncated": {bareTag, 0x10},
		"version 2":      {upstreamTag, 2, 0, 0, 0, dataTag, 0},
		"bad data":       {upstreamTag, 1, 0, 0, 0, dataTag, 2, bareTag, 0x10},
		"bad context":    {upstreamTag, 1, 0, 0, 0, dataTag, 0, contextTag, 2, 0xff, 0xff},
		"two data":       {upstreamTag, 1, 0, 0, 0, dataTag, 0, dataTag, 2, bareTag, 0x10},
	} {
		_, _, err := enc.Unmarshal(b)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "otlp_http_wire: ", name)
		assert.Contains(t, err.Error(), "logs queue item", name)
	}
}

// Every prefix of a valid request either is refused or, when pdata decodes
// it (a cut between two top-level fields), counts what pdata counts.
func TestCountItemsOnEveryPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, sig := range allSignals() {
		b := bytes.Join(randomRequest(t, rng, sig).chunks, nil)
		for i := range b {
			checkCount(t, sig, b[:i])
		}
	}
}

func checkCount(t *testing.T, sig *signal, b []byte) {
	t.Helper()
	got, err := sig.count(b)
	want, perr := pdataCount(sig, b)
	if perr != nil {
		return // pdata refuses it: the counter may refuse it or count it
	}
	if err != nil || got != want {
		t.Fatalf("%s: pdata counts %d in %x, the counter %d (%v)", sig.name, want, b, got, err)
	}
}

// FuzzCountItems: the counter never panics and agrees with pdata whenever
// pdata decodes the bytes.
func FuzzCountItems(f *testing.F) {
	// Small seeds: the fuzzer minimizes every new input it finds, which
	// takes long on the 100 KB requests randomRequest makes.
	f.Add(bytes.Join(logsReq(f, 0, 3).chunks, nil))
	m, err := metricsFromPdata(makeMetrics(3, 2))
	require.NoError(f, err)
	f.Add(m.chunks[0])
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName("s")
	tr, err := tracesFromPdata(td)
	require.NoError(f, err)
	f.Add(tr.chunks[0])
	f.Add(msg(1, msg(1000, msg(2)), msg(2, msg(2, msg(5, msg(1)), msg(7, msg(1), msg(1))))))
	f.Add(append(unknownFields(), msg(1, unknownFields(), msg(2, unknownFields(), msg(2)))...))
	f.Add([]byte{0x0b, 0x08, 0x01, 0x0c})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, sig := range allSignals() {
			checkCount(t, sig, b)
		}
	})
}

func FuzzQueueEncodingUnmarshal(f *testing.F) {
	enc := queueEncoding{sig: logsSignal}
	r := logsReq(f, 0, 3)
	ours, _ := enc.Marshal(context.Background(), r)
	up, _ := pdatareq.MarshalLogs(context.Background(), makeLogs(0, 3))
	f.Add(ours)
	f.Add(up)
	f.Add(marshalV1(r))
	f.Add(marshalBare(r))
	f.Add([]byte{wireFormatV1})
	f.Add([]byte{wireFormatV1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, req, err := enc.Unmarshal(b)
		if err != nil {
			return
		}
		if req.ItemsCount() < 0 || req.BytesSize() > len(b) {
			t.Fatalf("items %d bytes %d from %d bytes", req.ItemsCount(), req.BytesSize(), len(b))
		}
		// Splitting what was read must not panic, whatever the bytes.
		_, _ = req.MergeSplit(context.Background(), 1, exporterhelper.RequestSizerTypeItems, nil)
	})
}

// Split pieces (re-encoded by split.go) are counted on read back as they
// were counted when cut.
func TestQueueEncodingRoundTripOfSplitPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, sig := range allSignals() {
		enc := queueEncoding{sig: sig}
		for range 20 {
			r := randomRequest(t, rng, sig)
			pieces, err := r.MergeSplit(context.Background(), 1+rng.IntN(7), exporterhelper.RequestSizerTypeItems, randomRequest(t, rng, sig))
			require.NoError(t, err)
			for _, p := range pieces {
				b, err := enc.Marshal(context.Background(), p)
				require.NoError(t, err)
				_, back, err := enc.Unmarshal(b)
				require.NoError(t, err)
				require.Equal(t, p.ItemsCount(), back.ItemsCount(), sig.name)
			}
		}
	}
}
