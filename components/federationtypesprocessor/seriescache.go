// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"container/list"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// seriesKey identifies one cumulative series: resource, scope, metric name and
// point attributes, hashed to 128 bits so the cache holds no strings.
type seriesKey [2]uint64

// seriesEntry is what start times and reset detection need about a series.
type seriesEntry struct {
	key    seriesKey
	start  pcommon.Timestamp
	lastTS pcommon.Timestamp
	last   float64 // counter value, or a histogram's/summary's count
	seen   time.Time
}

// seriesCache is an LRU with a TTL. Least recently seen is at the back, so both
// expiry and eviction only ever look at the back: the cost is proportional to
// what is removed, never to the size of the cache. Batches share it, so every
// method takes the lock.
type seriesCache struct {
	mu      sync.Mutex
	max     int
	ttl     time.Duration
	entries map[seriesKey]*list.Element
	order   *list.List
	evicted int64 // forgotten because the cache was full
	expired int64 // forgotten because they went stale
}

func newSeriesCache(maxSeries int, ttl time.Duration) *seriesCache {
	return &seriesCache{
		max:     maxSeries,
		ttl:     ttl,
		entries: make(map[seriesKey]*list.Element),
		order:   list.New(),
	}
}

func (c *seriesCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// observe records a sample of a cumulative series and returns its start time.
//
// A series seen for the first time starts at its own timestamp: the processor
// cannot know when the target's counter really started, and claiming an earlier
// time would invent a rate. A value lower than the previous one is a reset, so
// the series starts again just after the previous sample. Federation returns the
// latest sample each time it is scraped, so the same timestamp arriving twice is
// normal and changes nothing; older timestamps (out of order) change nothing
// either.
func (c *seriesCache) observe(key seriesKey, ts pcommon.Timestamp, value float64, now time.Time) pcommon.Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*seriesEntry)
		c.order.MoveToFront(el)
		e.seen = now
		if ts > e.lastTS {
			if value < e.last {
				e.start = resetStart(e.lastTS, ts)
			}
			e.lastTS, e.last = ts, value
		}
		if e.start > ts {
			return ts
		}
		return e.start
	}
	for len(c.entries) >= c.max {
		c.removeBack()
		c.evicted++
	}
	e := &seriesEntry{key: key, start: ts, lastTS: ts, last: value, seen: now}
	c.entries[key] = c.order.PushFront(e)
	return ts
}

// known reports whether a series is in the cache, without recording a sample
// or ending the series.
func (c *seriesCache) known(key seriesKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[key]
	return ok
}

// end drops a series after its staleness marker, and returns the start time
// the marker carries if the series was known. If the series comes back, it is a
// new series with a new start.
func (c *seriesCache) end(key seriesKey) (start pcommon.Timestamp, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		start, known = el.Value.(*seriesEntry).start, true
		c.order.Remove(el)
		delete(c.entries, key)
	}
	return start, known
}

// expire forgets series not seen since now-ttl.
func (c *seriesCache) expire(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cutoff := now.Add(-c.ttl)
	for el := c.order.Back(); el != nil; el = c.order.Back() {
		if !el.Value.(*seriesEntry).seen.Before(cutoff) {
			return
		}
		c.removeBack()
		c.expired++
	}
}

func (c *seriesCache) removeBack() {
	el := c.order.Back()
	if el == nil {
		return
	}
	c.order.Remove(el)
	delete(c.entries, el.Value.(*seriesEntry).key)
}

// resetStart picks the start of a series that reset between prev and cur: one
// millisecond (Prometheus's resolution) after the previous sample, so the new
// interval never overlaps the old one, and never later than cur.
func resetStart(prev, cur pcommon.Timestamp) pcommon.Timestamp {
	s := prev + pcommon.Timestamp(time.Millisecond)
	if s > cur {
		return cur
	}
	return s
}
