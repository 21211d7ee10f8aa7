// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"encoding/binary"
	"hash/maphash"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// hashSeeds are the processor's two seeds of a 128-bit series key. They are
// fixed for the processor's life, so every batch computes the same key for the
// same series.
type hashSeeds [2]maphash.Seed

func newHashSeeds() hashSeeds { return hashSeeds{maphash.MakeSeed(), maphash.MakeSeed()} }

// keyHasher hashes resources, scopes and points into series keys. Each batch
// has its own, so concurrent batches hash without sharing any state.
type keyHasher struct {
	h [2]maphash.Hash
}

func (k *keyHasher) seed(seeds hashSeeds) {
	for i := range k.h {
		k.h[i].SetSeed(seeds[i])
	}
}

// attrs hashes a map independently of its order (the sum of per-entry hashes),
// skipping the key excl.
func (k *keyHasher) attrs(m pcommon.Map, excl string) seriesKey {
	var key seriesKey
	m.Range(func(name string, v pcommon.Value) bool {
		if name == excl {
			return true
		}
		var s string
		if v.Type() == pcommon.ValueTypeStr {
			s = v.Str()
		} else {
			s = v.AsString()
		}
		for i := range k.h {
			h := &k.h[i]
			h.Reset()
			_, _ = h.WriteString(name)
			_ = h.WriteByte(byte(v.Type()))
			_, _ = h.WriteString(s)
			key[i] += h.Sum64()
		}
		return true
	})
	return key
}

// scope is where the keys of a scope's series start: its resource's and its own.
func (k *keyHasher) scope(res seriesKey, scope pcommon.InstrumentationScope) seriesKey {
	return k.mix(res, scope.Name()+"\x00"+scope.Version(), seriesKey{})
}

// series is the key of one series of the metric name under base (a scope's key).
func (k *keyHasher) series(base seriesKey, name string, attrs seriesKey) seriesKey {
	return k.mix(base, name, attrs)
}

func (k *keyHasher) mix(a seriesKey, s string, b seriesKey) seriesKey {
	var buf [32]byte
	binary.LittleEndian.PutUint64(buf[0:], a[0])
	binary.LittleEndian.PutUint64(buf[8:], a[1])
	binary.LittleEndian.PutUint64(buf[16:], b[0])
	binary.LittleEndian.PutUint64(buf[24:], b[1])
	var key seriesKey
	for i := range k.h {
		h := &k.h[i]
		h.Reset()
		_, _ = h.Write(buf[:])
		_, _ = h.WriteString(s)
		key[i] = h.Sum64()
	}
	return key
}
