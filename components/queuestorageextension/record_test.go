// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// encodeRecord appends the record for ops to dst and returns it together with
// the offset of each set operation's value within the record (-1 for deletes).
func encodeRecord(dst []byte, ops []op) ([]byte, []int) {
	parts, _, offs, err := recordParts(ops, maxRecordLen)
	if err != nil {
		panic(err)
	}
	for _, p := range parts {
		dst = append(dst, p...)
	}
	return dst, offs
}

func TestRecordRoundTrip(t *testing.T) {
	ops := []op{
		{typ: opSet, key: "qmv0", value: []byte{1, 2, 3}},
		{typ: opSet, key: "17", value: bytes.Repeat([]byte("x"), 5000)},
		{typ: opDelete, key: "16"},
		{typ: opSet, key: "", value: nil},
	}
	rec, offs := encodeRecord([]byte("prefix"), ops)
	got, n, err := decodeRecord(rec[len("prefix"):], maxRecordLen)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(rec)-len("prefix") {
		t.Fatalf("length %d, want %d", n, len(rec)-len("prefix"))
	}
	if len(got) != len(ops) {
		t.Fatalf("%d ops, want %d", len(got), len(ops))
	}
	for i := range ops {
		if got[i].typ != ops[i].typ || got[i].key != ops[i].key || !bytes.Equal(got[i].value, ops[i].value) || got[i].valueOff != offs[i] {
			t.Errorf("op %d: got %+v (offset %d), want %+v (offset %d)", i, got[i], got[i].valueOff, ops[i], offs[i])
		}
	}
}

func TestRecordDamage(t *testing.T) {
	rec, _ := encodeRecord(nil, []op{{typ: opSet, key: "k", value: []byte("value")}})
	if _, _, err := decodeRecord(make([]byte, 64), maxRecordLen); !errors.Is(err, errEndOfData) {
		t.Errorf("zeros: %v, want end of data", err)
	}
	for cut := 1; cut < len(rec); cut++ {
		torn := append(append([]byte(nil), rec[:cut]...), make([]byte, len(rec)-cut)...)
		if _, _, err := decodeRecord(torn, maxRecordLen); err == nil {
			t.Errorf("record cut at %d of %d (zeros after) decoded without error", cut, len(rec))
		}
		if _, _, err := decodeRecord(rec[:cut], maxRecordLen); err == nil {
			t.Errorf("record truncated to %d of %d decoded without error", cut, len(rec))
		}
	}
	for i := range rec {
		bad := append([]byte(nil), rec...)
		bad[i] ^= 0x40
		if _, _, err := decodeRecord(bad, maxRecordLen); err == nil {
			t.Errorf("record with byte %d flipped decoded without error", i)
		}
	}
}

// FuzzRecord: decoding arbitrary bytes never panics and never accepts what it
// cannot re-encode identically; encoding arbitrary operations round-trips.
func FuzzRecord(f *testing.F) {
	rec, _ := encodeRecord(nil, []op{{typ: opSet, key: "qmv0", value: []byte("meta")}, {typ: opDelete, key: "3"}})
	f.Add(rec, "k", []byte("v"))
	f.Add([]byte{}, "", []byte{})
	f.Add(make([]byte, 16), "7", make([]byte, 100))
	f.Fuzz(func(t *testing.T, raw []byte, key string, value []byte) {
		if ops, n, err := decodeRecord(raw, maxRecordLen); err == nil {
			again, _ := encodeRecord(nil, ops)
			if !bytes.Equal(again, raw[:n]) {
				t.Fatalf("decoded record does not re-encode to the same bytes")
			}
		}
		in := []op{{typ: opSet, key: key, value: value}, {typ: opDelete, key: key + "x"}}
		rec, _ := encodeRecord(nil, in)
		out, n, err := decodeRecord(append(rec, raw...), maxRecordLen)
		if err != nil || n != len(rec) || len(out) != 2 || out[0].key != key || !bytes.Equal(out[0].value, value) || out[1].key != key+"x" {
			t.Fatalf("round trip of %q=%x: %+v, %d, %v", key, value, out, n, err)
		}
	})
}

// A record the store could not read back at the next start is refused when it
// is written, with an error naming its size, and leaves the store usable:
// before, it was written, acknowledged, and dropped at the restart as a torn
// tail together with every record after it in its segment.
func TestRecordOverLimitIsRefused(t *testing.T) {
	dir := t.TempDir()
	o, _ := testOptions(1 << 20)
	o.maxRecord = 64 << 10
	s := openTest(t, dir, o)
	mustBatch(t, s, storage.SetOperation("before", []byte("kept")))
	err := s.Set(ctx, "big", item(1, 100<<10))
	if !errors.Is(err, errRecordTooLarge) || !strings.Contains(err.Error(), "102408 bytes") || !strings.Contains(err.Error(), "65536") {
		t.Errorf("Set of a 100 KiB value with a 64 KiB record limit: %v, want %v naming the record's size and the limit", err, errRecordTooLarge)
	}
	mustBatch(t, s, storage.SetOperation("after", []byte("kept too")))
	s.Close(ctx)

	s = openTest(t, dir, o)
	defer s.Close(ctx)
	expectValue(t, s, "before", []byte("kept"))
	expectValue(t, s, "after", []byte("kept too"))
	if err == nil {
		expectValue(t, s, "big", item(1, 100<<10))
	} else {
		expectValue(t, s, "big", nil)
	}
}

func TestRecordPartsRefusesOverLimit(t *testing.T) {
	ops := []op{{typ: opSet, key: "k", value: make([]byte, 1000)}}
	if _, total, _, err := recordParts(ops, 1005); err != nil || total != headerLen+1005 {
		t.Fatalf("a record of exactly the limit: %d bytes, %v", total, err)
	}
	_, _, _, err := recordParts(ops, 1004)
	if !errors.Is(err, errRecordTooLarge) || !strings.Contains(err.Error(), "1005 bytes") {
		t.Fatalf("a record one byte over the limit: %v, want %v naming 1005 bytes", err, errRecordTooLarge)
	}
}
