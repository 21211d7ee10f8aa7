// SPDX-License-Identifier: Apache-2.0

package attributestoresourceprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// genOptions chooses what a generated input may contain.
type genOptions struct {
	// lossy adds what groupbyattrs loses or merges away: schema URLs,
	// dropped attribute counts, and scopes with the same name and version but
	// different attributes.
	lossy bool
}

// genLogs builds a varied input: up to 4 resources drawn from a small pool
// (so that equal resources recur, sometimes with their attributes in another
// order, sometimes already holding a key), up to 3 scopes each, up to 12
// records per scope carrying all, some or none of the keys, with string
// values from few pods and now and then an int, bool, double, bytes, map,
// slice, empty string or empty value. Empty resources and scopes occur too.
func genLogs(r *rand.Rand, o genOptions) plog.Logs {
	ld := plog.NewLogs()
	seq := 0
	for range r.IntN(5) {
		rl := ld.ResourceLogs().AppendEmpty()
		ra := rl.Resource().Attributes()
		switch r.IntN(6) {
		case 0: // none
		case 1:
			ra.PutStr("service.name", "flows")
		case 2:
			ra.PutStr("service.name", "flows")
			ra.PutStr("host.name", "node-1")
		case 3: // case 2 in another order
			ra.PutStr("host.name", "node-1")
			ra.PutStr("service.name", "flows")
		case 4: // a key already on the resource
			ra.PutStr("service.name", "flows")
			ra.PutStr("k8s.pod.name", pick(r, "pod-a", "pod-b"))
		case 5:
			ra.PutStr("k8s.namespace.name", "payments")
			ra.PutInt("k8s.pod.uid", 42)
		}
		if o.lossy {
			rl.SetSchemaUrl(pick(r, "", "https://opentelemetry.io/schemas/1.30.0"))
			rl.Resource().SetDroppedAttributesCount(uint32(r.IntN(2) * 3))
		}
		for range r.IntN(4) {
			sl := rl.ScopeLogs().AppendEmpty()
			switch r.IntN(4) {
			case 0:
			case 1:
				sl.Scope().SetName("fluent-bit")
			case 2:
				sl.Scope().SetName("fluent-bit")
				sl.Scope().SetVersion("4.0")
				sl.Scope().Attributes().PutStr("input", "tail")
			case 3:
				sl.Scope().SetName("app")
				sl.Scope().SetVersion("1")
			}
			if o.lossy {
				sl.SetSchemaUrl(pick(r, "", "https://opentelemetry.io/schemas/1.29.0"))
				if r.IntN(2) == 0 {
					sl.Scope().Attributes().PutStr("input", pick(r, "tail", "systemd"))
				}
				sl.Scope().SetDroppedAttributesCount(uint32(r.IntN(2)))
			}
			for range r.IntN(13) {
				lr := sl.LogRecords().AppendEmpty()
				lr.Body().SetStr(fmt.Sprintf("line %d", seq))
				lr.SetTimestamp(pcommon.Timestamp(seq))
				seq++
				a := lr.Attributes()
				a.PutStr("stream", "stdout")
				for _, k := range podKeys {
					if r.IntN(3) == 0 {
						continue
					}
					putValue(r, a, k)
				}
				if r.IntN(4) == 0 {
					a.PutInt("other", int64(seq))
				}
			}
		}
	}
	return ld
}

func putValue(r *rand.Rand, a pcommon.Map, k string) {
	switch r.IntN(13) {
	case 0:
		a.PutInt(k, int64(r.IntN(2)))
	case 1:
		a.PutBool(k, r.IntN(2) == 0)
	case 2:
		a.PutDouble(k, 1.5)
	case 3:
		a.PutEmptyBytes(k).FromRaw([]byte{1, 2})
	case 4:
		m := a.PutEmptyMap(k)
		m.PutStr("a", "b")
	case 5:
		s := a.PutEmptySlice(k)
		s.AppendEmpty().SetStr(pick(r, "x", "y"))
	case 6:
		a.PutStr(k, "")
	case 7:
		a.PutEmpty(k)
	default:
		a.PutStr(k, pick(r, "pod-a", "pod-b", "pod-c"))
	}
}

func pick(r *rand.Rand, s ...string) string { return s[r.IntN(len(s))] }

// runBoth feeds each processor its own copy of in and returns their outputs.
func runBoth(t *testing.T, keys []string, in plog.Logs) (ours, upstream plog.Logs) {
	t.Helper()
	var so, su consumertest.LogsSink
	po, pu := newOurs(t, keys, &so), newUpstream(t, keys, &su)
	a, b := plog.NewLogs(), plog.NewLogs()
	in.CopyTo(a)
	in.CopyTo(b)
	require.NoError(t, po.ConsumeLogs(context.Background(), a))
	require.NoError(t, pu.ConsumeLogs(context.Background(), b))
	require.Len(t, so.AllLogs(), 1)
	require.Len(t, su.AllLogs(), 1)
	return so.AllLogs()[0], su.AllLogs()[0]
}

func marshalJSON(t *testing.T, ld plog.Logs) string {
	t.Helper()
	b, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	return string(b)
}

// TestSameOutputAsGroupByAttrs: on inputs without what groupbyattrs loses,
// the output is exactly upstream's, order included: resources and scopes in
// order of first appearance, records in input order, resource attributes in
// the resource's order followed by the keys in config order. That order is
// not an accident of upstream's: it is first-appearance order, which this
// processor produces by design, so the comparison is byte for byte.
func TestSameOutputAsGroupByAttrs(t *testing.T) {
	for _, keys := range [][]string{podKeys, {"k8s.pod.uid"}, {"k8s.container.name", "k8s.pod.name"}} {
		for seed := range uint64(400) {
			in := genLogs(rand.New(rand.NewPCG(seed, 1)), genOptions{})
			ours, upstream := runBoth(t, keys, in)
			if !assert.JSONEq(t, marshalJSON(t, upstream), marshalJSON(t, ours), "keys %v seed %d\ninput %s", keys, seed, marshalJSON(t, in)) {
				return
			}
			require.Equal(t, marshalJSON(t, upstream), marshalJSON(t, ours), "keys %v seed %d: same content, different order", keys, seed)
		}
	}
}

// TestSameOutputOnBenchmarkInputs: the requests BenchmarkProcessLogs times give
// the same output from both, so the benchmark compares the same work.
func TestSameOutputOnBenchmarkInputs(t *testing.T) {
	for _, in := range benchInputs() {
		ours, upstream := runBoth(t, podKeys, in.ld)
		require.Equal(t, marshalJSON(t, upstream), marshalJSON(t, ours), in.name)
	}
}

// TestSameRecordsWhereGroupByAttrsLoses: on inputs with schema URLs, dropped
// attribute counts and scopes that share a name and version but not their
// attributes, every record still ends under the resource attributes and the
// scope name and version groupbyattrs gives it, but this processor keeps
// what groupbyattrs drops, and so keeps such resources and scopes apart.
// Compared per record, order-insensitive (the split changes the grouping).
func TestSameRecordsWhereGroupByAttrsLoses(t *testing.T) {
	for seed := range uint64(400) {
		in := genLogs(rand.New(rand.NewPCG(seed, 2)), genOptions{lossy: true})
		want := inputRecords(in)
		ours, upstream := runBoth(t, podKeys, in)
		require.Equal(t, flatten(t, upstream, false), flatten(t, ours, false), "seed %d", seed)

		// What each record came with survives here, keys lifted.
		got := flatten(t, ours, true)
		require.Len(t, got, len(want))
		for i := range got {
			require.Equal(t, want[i].kept, got[i].kept, "seed %d record %s", seed, got[i].record)
		}
	}
}

// flatRecord is one record with what it ends up under.
type flatRecord struct {
	record   string // the record as JSON, timestamp first so records sort by input order
	resource string // resource attributes, keys sorted
	scope    string // scope name and version
	kept     string // what groupbyattrs loses: schema URLs, dropped counts, scope attributes
}

func flatten(t *testing.T, ld plog.Logs, withKept bool) []flatRecord {
	t.Helper()
	var out []flatRecord
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				f := flatRecord{
					record:   fmt.Sprintf("%020d %s %s", lr.Timestamp(), lr.Body().AsString(), rawJSON(t, lr.Attributes())),
					resource: rawJSON(t, rl.Resource().Attributes()),
					scope:    sl.Scope().Name() + "@" + sl.Scope().Version(),
				}
				if withKept {
					f.kept = fmt.Sprintf("%s %d %s %d %s", rl.SchemaUrl(), rl.Resource().DroppedAttributesCount(),
						sl.SchemaUrl(), sl.Scope().DroppedAttributesCount(), rawJSON(t, sl.Scope().Attributes()))
				}
				out = append(out, f)
			}
		}
	}
	slices.SortFunc(out, func(a, b flatRecord) int {
		if a.record < b.record {
			return -1
		}
		if a.record > b.record {
			return 1
		}
		return 0
	})
	return out
}

// inputRecords is what each input record carries that groupbyattrs loses, in
// the order flatten sorts records (by timestamp = input order).
func inputRecords(ld plog.Logs) []flatRecord {
	var out []flatRecord
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for range sl.LogRecords().All() {
				out = append(out, flatRecord{kept: fmt.Sprintf("%s %d %s %d %s", rl.SchemaUrl(), rl.Resource().DroppedAttributesCount(),
					sl.SchemaUrl(), sl.Scope().DroppedAttributesCount(), mustRawJSON(sl.Scope().Attributes()))})
			}
		}
	}
	return out
}

func rawJSON(t *testing.T, m pcommon.Map) string {
	t.Helper()
	b, err := json.Marshal(m.AsRaw()) // encoding/json sorts map keys
	require.NoError(t, err)
	return string(b)
}

func mustRawJSON(m pcommon.Map) string {
	b, err := json.Marshal(m.AsRaw())
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestMovesRecords: the records leave the incoming data (moved, not copied),
// and a scope whose records all go to one group hands over its slice whole.
func TestMovesRecords(t *testing.T) {
	in := plog.NewLogs()
	rl := in.ResourceLogs().AppendEmpty()
	one := rl.ScopeLogs().AppendEmpty() // all from one pod
	mixed := rl.ScopeLogs().AppendEmpty()
	mixed.Scope().SetName("mixed")
	for i := range 10 {
		a := one.LogRecords().AppendEmpty().Attributes()
		a.PutStr("k8s.pod.uid", "u1")
		a.PutInt("i", int64(i))
		b := mixed.LogRecords().AppendEmpty().Attributes()
		b.PutStr("k8s.pod.uid", []string{"u1", "u2", "u2"}[i%3])
		b.PutInt("i", int64(i))
	}
	firstOfOne := one.LogRecords().At(0)

	var sink consumertest.LogsSink
	p := newOurs(t, []string{"k8s.pod.uid"}, &sink)
	require.True(t, p.Capabilities().MutatesData)
	require.NoError(t, p.ConsumeLogs(context.Background(), in))

	assert.Equal(t, 0, one.LogRecords().Len(), "records were copied, not moved")
	assert.Equal(t, 0, mixed.LogRecords().Len(), "records were copied, not moved")
	out := sink.AllLogs()[0]
	require.Equal(t, 2, out.ResourceLogs().Len())
	u1 := out.ResourceLogs().At(0)
	v, _ := u1.Resource().Attributes().Get("k8s.pod.uid")
	assert.Equal(t, "u1", v.Str())
	// The same record object, not a copy: setting it through the old handle shows.
	firstOfOne.Body().SetStr("moved")
	assert.Equal(t, "moved", u1.ScopeLogs().At(0).LogRecords().At(0).Body().Str())
	assert.Equal(t, 10+4, u1.ScopeLogs().At(0).LogRecords().Len()+u1.ScopeLogs().At(1).LogRecords().Len())
	u2 := out.ResourceLogs().At(1).ScopeLogs().At(0).LogRecords()
	require.Equal(t, 6, u2.Len())
	for i, want := range []int64{1, 2, 4, 5, 7, 8} {
		got, _ := u2.At(i).Attributes().Get("i")
		assert.Equal(t, want, got.Int(), "record %d of u2 out of input order", i)
		_, has := u2.At(i).Attributes().Get("k8s.pod.uid")
		assert.False(t, has, "the key stays on the record")
	}
}
