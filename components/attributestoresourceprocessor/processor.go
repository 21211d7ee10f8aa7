// SPDX-License-Identifier: Apache-2.0

package attributestoresourceprocessor

import (
	"context"
	"encoding/binary"
	"math"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/xpdata/xhash"
)

type attributesToResource struct {
	keys         []string
	keepResource bool
}

func newProcessor(c *Config) *attributesToResource {
	return &attributesToResource{keys: append([]string(nil), c.Keys...), keepResource: c.KeepResource}
}

// processLogs returns the records of ld regrouped: each under its resource plus
// the values of the keys it carried (removed from the record), resources and
// scopes that end up equal merged, in the order groupbyattrs gives them (first
// appearance). The records themselves are moved, never copied.
func (p *attributesToResource) processLogs(_ context.Context, ld plog.Logs) (plog.Logs, error) {
	g := grouping{
		keys:         p.keys,
		keepResource: p.keepResource,
		out:          plog.NewLogs(),
		resIndex:     map[resourceKey]int{},
		local:        map[string]int{},
	}
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		clear(g.local)
		g.locals = g.locals[:0]
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			g.moveScope(rl, sls.At(j))
		}
	}
	return g.out, nil
}

// resourceKey says when two output resources are the same one: the attributes
// as groupbyattrs compares them (xhash.MapHash: order-insensitive), plus what
// groupbyattrs throws away and we keep, so it cannot be merged away either.
type resourceKey struct {
	attrs   [16]byte
	dropped uint32
	schema  string
}

// scopeKey says when two scopes under one output resource are merged.
// groupbyattrs compares name and version only, and keeps the first scope's
// attributes for all; we keep scopes that differ in anything apart.
type scopeKey struct {
	name, version, schema string
	attrs                 [16]byte
	dropped               uint32
}

type outResource struct {
	rl     plog.ResourceLogs
	scopes []outScope
}

type outScope struct {
	key scopeKey
	sl  plog.ScopeLogs
}

// local is one distinct combination of key values within the input resource
// being processed: its output resource, resolved once, and its destination in
// the input scope being processed.
type local struct {
	res       int
	scopeSeen int // serial of the input scope dest belongs to
	dest      int
}

// dest is one output ScopeLogs that records of the current input scope go to.
type dest struct {
	res   int
	sl    plog.ScopeLogs
	count int
}

type grouping struct {
	keys         []string
	keepResource bool
	out          plog.Logs
	resources    []outResource
	resIndex     map[resourceKey]int

	// Per input resource: key values (encoded by appendSignature) -> locals index.
	local  map[string]int
	locals []local

	// Per input scope.
	serial   int
	dests    []dest
	recDest  []int32
	sig      []byte
	haveSK   bool
	curScope scopeKey
}

func (g *grouping) moveScope(rl plog.ResourceLogs, sl plog.ScopeLogs) {
	records := sl.LogRecords()
	n := records.Len()
	if n == 0 {
		return // as groupbyattrs: a scope without records is not kept
	}
	g.serial++
	g.dests = g.dests[:0]
	g.recDest = slices.Grow(g.recDest[:0], n)
	g.haveSK = false
	for k := 0; k < n; k++ {
		attrs := records.At(k).Attributes()
		var found bool
		g.sig, found = g.appendSignature(g.sig[:0], attrs)
		l, ok := g.local[string(g.sig)]
		if !ok {
			l = len(g.locals)
			g.locals = append(g.locals, local{res: g.resourceFor(rl, attrs), scopeSeen: -1})
			g.local[string(g.sig)] = l
		}
		if found {
			for _, key := range g.keys {
				attrs.Remove(key)
			}
		}
		loc := &g.locals[l]
		if loc.scopeSeen != g.serial {
			loc.scopeSeen = g.serial
			loc.dest = g.destFor(loc.res, sl)
		}
		g.recDest = append(g.recDest, int32(loc.dest))
		g.dests[loc.dest].count++
	}

	if len(g.dests) == 1 {
		// The common case (a fluent-bit chunk comes from one container): the
		// whole slice of records changes hands, nothing is allocated per record.
		records.MoveAndAppendTo(g.dests[0].sl.LogRecords())
		return
	}
	// Records of the largest group stay in their slice, which then changes
	// hands; the others move one by one. Each destination still receives the
	// records of this scope in their input order.
	dominant := 0
	for d := range g.dests {
		if g.dests[d].count > g.dests[dominant].count {
			dominant = d
		}
	}
	for d := range g.dests {
		if d != dominant {
			lrs := g.dests[d].sl.LogRecords()
			lrs.EnsureCapacity(lrs.Len() + g.dests[d].count)
		}
	}
	k := 0
	records.RemoveIf(func(lr plog.LogRecord) bool {
		d := int(g.recDest[k])
		k++
		if d == dominant {
			return false
		}
		lr.MoveTo(g.dests[d].sl.LogRecords().AppendEmpty())
		return true
	})
	records.MoveAndAppendTo(g.dests[dominant].sl.LogRecords())
}

// appendSignature encodes which keys attrs holds and their values, in key
// order, and reports whether it holds any. Strings and ints, what pod identity
// is made of, are written out; other values by their 128-bit xhash, which is
// how groupbyattrs tells resources apart anyway.
func (g *grouping) appendSignature(b []byte, attrs pcommon.Map) ([]byte, bool) {
	found := false
	for _, key := range g.keys {
		v, ok := attrs.Get(key)
		if !ok {
			b = append(b, 0)
			continue
		}
		found = true
		switch v.Type() {
		case pcommon.ValueTypeStr:
			s := v.Str()
			b = append(b, 1)
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		case pcommon.ValueTypeInt:
			b = append(b, 2)
			b = binary.LittleEndian.AppendUint64(b, uint64(v.Int()))
		case pcommon.ValueTypeBool:
			if v.Bool() {
				b = append(b, 3)
			} else {
				b = append(b, 4)
			}
		case pcommon.ValueTypeDouble:
			b = append(b, 5)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Double()))
		default:
			h := xhash.ValueHash(v)
			b = append(b, 6)
			b = append(b, h[:]...)
		}
	}
	return b, found
}

// resourceFor returns the output resource of rl's attributes plus the keys
// recAttrs holds (the record's value wins), creating it on first use. It runs
// once per distinct combination of key values in an input resource, not per
// record.
func (g *grouping) resourceFor(rl plog.ResourceLogs, recAttrs pcommon.Map) int {
	res := pcommon.NewResource()
	rl.Resource().Attributes().CopyTo(res.Attributes())
	if !g.keepResource || !g.holdsAnyKey(res.Attributes()) {
		for _, key := range g.keys {
			if v, ok := recAttrs.Get(key); ok {
				v.CopyTo(res.Attributes().PutEmpty(key))
			}
		}
	}
	dropped := rl.Resource().DroppedAttributesCount()
	key := resourceKey{attrs: xhash.MapHash(res.Attributes()), dropped: dropped, schema: rl.SchemaUrl()}
	if i, ok := g.resIndex[key]; ok {
		return i
	}
	orl := g.out.ResourceLogs().AppendEmpty()
	res.SetDroppedAttributesCount(dropped)
	res.MoveTo(orl.Resource())
	orl.SetSchemaUrl(rl.SchemaUrl())
	g.resources = append(g.resources, outResource{rl: orl})
	g.resIndex[key] = len(g.resources) - 1
	return len(g.resources) - 1
}

// holdsAnyKey reports whether attrs (a resource's) holds one of the keys: with
// keepResource such a resource is not lifted into. One key is enough: a
// record's k8s.pod.uid next to a resource's k8s.pod.name would still make
// k8s_attributes associate with the record's pod.
func (g *grouping) holdsAnyKey(attrs pcommon.Map) bool {
	for _, key := range g.keys {
		if _, ok := attrs.Get(key); ok {
			return true
		}
	}
	return false
}

// destFor returns the index in g.dests of output resource res's scope equal
// to sl's, creating either on first use.
func (g *grouping) destFor(res int, sl plog.ScopeLogs) int {
	for d := range g.dests {
		if g.dests[d].res == res {
			return d
		}
	}
	if !g.haveSK {
		s := sl.Scope()
		g.curScope = scopeKey{
			name: s.Name(), version: s.Version(), schema: sl.SchemaUrl(),
			attrs: xhash.MapHash(s.Attributes()), dropped: s.DroppedAttributesCount(),
		}
		g.haveSK = true
	}
	or := &g.resources[res]
	var osl plog.ScopeLogs
	found := false
	for _, s := range or.scopes {
		if s.key == g.curScope {
			osl, found = s.sl, true
			break
		}
	}
	if !found {
		osl = or.rl.ScopeLogs().AppendEmpty()
		sl.Scope().CopyTo(osl.Scope())
		osl.SetSchemaUrl(sl.SchemaUrl())
		or.scopes = append(or.scopes, outScope{key: g.curScope, sl: osl})
	}
	g.dests = append(g.dests, dest{res: res, sl: osl})
	return len(g.dests) - 1
}
