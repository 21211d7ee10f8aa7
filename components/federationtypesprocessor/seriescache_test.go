// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func ts(sec int) pcommon.Timestamp { return pcommon.Timestamp(int64(sec) * int64(time.Second)) }

func TestSeriesCacheExpiresStaleSeries(t *testing.T) {
	c := newSeriesCache(10, time.Minute)
	now := t0
	c.observe(seriesKey{1}, ts(1), 1, now)
	c.observe(seriesKey{2}, ts(1), 1, now.Add(30*time.Second))
	c.expire(now.Add(61 * time.Second))
	if ok := c.known(seriesKey{1}); ok {
		t.Error("series 1, unseen for 61s with a 1m TTL, was not expired")
	}
	if ok := c.known(seriesKey{2}); !ok {
		t.Error("series 2, seen 31s ago, was expired")
	}
	// A series that comes back after expiry is new: it starts at its own sample.
	if got := c.observe(seriesKey{1}, ts(100), 5, now.Add(2*time.Minute)); got != ts(100) {
		t.Errorf("returning series start %s, want %s", got, ts(100))
	}
	if c.expired != 1 {
		t.Errorf("expired = %d, want 1", c.expired)
	}
}

func TestSeriesCacheIsBoundedLRU(t *testing.T) {
	c := newSeriesCache(3, time.Hour)
	for i := range 3 {
		c.observe(seriesKey{uint64(i)}, ts(1), 1, t0)
	}
	c.observe(seriesKey{0}, ts(2), 2, t0) // 0 is now the most recent
	c.observe(seriesKey{3}, ts(2), 1, t0) // evicts 1, the least recent
	if c.len() != 3 {
		t.Fatalf("len %d, want 3", c.len())
	}
	if ok := c.known(seriesKey{1}); ok {
		t.Error("least recently seen series survived eviction")
	}
	for _, k := range []uint64{0, 2, 3} {
		if ok := c.known(seriesKey{k}); !ok {
			t.Errorf("series %d evicted", k)
		}
	}
	if c.evicted != 1 {
		t.Errorf("evicted = %d, want 1", c.evicted)
	}
}

// Memory stays flat: a week of churn (a new series every scrape, each living a
// few minutes) never holds more than what the TTL window contains.
func TestSeriesCacheFlatUnderChurn(t *testing.T) {
	c := newSeriesCache(1_000_000, 15*time.Minute)
	now := t0
	peak := 0
	for i := range 7 * 24 * 120 { // a scrape every 30s for a week
		now = now.Add(30 * time.Second)
		c.observe(seriesKey{uint64(i)}, pcommon.NewTimestampFromTime(now), 1, now)
		c.expire(now)
		peak = max(peak, c.len())
	}
	if peak > 31 {
		t.Errorf("peak %d series cached, want at most the 31 seen within the 15m TTL", peak)
	}
}

func TestResetStart(t *testing.T) {
	prev := ts(10)
	if got := resetStart(prev, ts(20)); got != prev+pcommon.Timestamp(time.Millisecond) {
		t.Errorf("resetStart = %s", got)
	}
	cur := prev + 500
	if got := resetStart(prev, cur); got != cur {
		t.Errorf("resetStart %s later than the point itself %s", got, cur)
	}
}
