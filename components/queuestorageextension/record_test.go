package queuestorageextension

import (
	"bytes"
	"errors"
	"testing"
)

// encodeRecord appends the record for ops to dst and returns it together with
// the offset of each set operation's value within the record (-1 for deletes).
func encodeRecord(dst []byte, ops []op) ([]byte, []int) {
	parts, _, offs := recordParts(ops)
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
	f.Add(make([]byte, 16), "7", bytes.Repeat([]byte{0}, 100))
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
