// SPDX-License-Identifier: Apache-2.0

// Package handoff lets an exporter give the queue items it encodes to the
// storage extension that stores them, so that the store keeps an item without
// copying it.
//
// A storage.Client has file_storage's value semantics: Set keeps its own copy,
// because a caller may reuse its buffer once Set returns. That copy is a
// second allocation and a second pass over every queued byte. An encoder
// whose items are never written to again by anyone (otlp_http_wire's: the
// request, its batches and its HTTP bodies only read them) can say so for one
// item with Give, right before upstream's persistent queue passes the item to
// Set; the store Claims it there and keeps the slice itself. A slice that was
// not given is copied, as before.
package handoff // import "github.com/otelcol-relay/otelcol-relay/components/internal/handoff"

import "sync"

// Provider is implemented by a storage extension that takes items over.
type Provider interface {
	Handoff() *Registry
}

// ringSize bounds the items given and not claimed yet: one per request
// between its encoding and its Set, so about as many as requests are being
// queued at once. An item pushed out by newer ones is copied by the store,
// which is only the cost it had without a handoff.
const ringSize = 64

// Registry holds the items given and not claimed yet. The zero value is
// ready; a nil *Registry gives and claims nothing.
type Registry struct {
	mu   sync.Mutex
	ring [ringSize]item
	next int
}

// item is a given slice by its first byte and length: Claim matches that
// slice exactly, not a part of it. Keeping the pointer keeps the memory from
// being reused for another slice while it waits.
type item struct {
	p *byte
	n int
}

// Give records that nobody writes to b again.
func (r *Registry) Give(b []byte) {
	if r == nil || len(b) == 0 {
		return
	}
	r.mu.Lock()
	r.ring[r.next] = item{&b[0], len(b)}
	r.next = (r.next + 1) % ringSize
	r.mu.Unlock()
}

// Claim reports whether b was given, and takes it out: the caller now holds
// b for good and may keep it without a copy.
func (r *Registry) Claim(b []byte) bool {
	if r == nil || len(b) == 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.ring {
		if r.ring[i].p == &b[0] && r.ring[i].n == len(b) { //nolint:gosec // G602: len(b) > 0 is checked above
			r.ring[i] = item{}
			return true
		}
	}
	return false
}
