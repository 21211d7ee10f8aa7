// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension/internal/metadatatest"
)

// clock is a settable now for itemAges.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// The persistent queue's traffic: per item one batch of its metadata key and the
// item, then the metadata and a delete once delivered. The age is the oldest
// undelivered item's, whatever the metadata keys do.
func TestOldestItemAgeFollowsTheQueue(t *testing.T) {
	o, _ := testOptions(64 << 10)
	s := openTest(t, t.TempDir(), o)
	defer s.Close(ctx)
	c := &clock{t: time.Unix(1_000_000, 0)}
	s.ages.now = c.now
	require.Zero(t, s.oldestItemAge(), "empty store")

	mustBatch(t, s, storage.SetOperation("qmv0", item(1, 10)), storage.SetOperation("0", item(2, 100)))
	c.t = c.t.Add(10 * time.Second)
	mustBatch(t, s, storage.SetOperation("qmv0", item(1, 10)), storage.SetOperation("1", item(3, 100)))
	c.t = c.t.Add(5 * time.Second)
	require.Equal(t, 15*time.Second, s.oldestItemAge())

	// Rewriting an item (it never happens in the queue, but a store must not
	// make it younger) and reading it keep its age.
	mustBatch(t, s, storage.SetOperation("0", item(2, 100)), storage.GetOperation("1"))
	require.Equal(t, 15*time.Second, s.oldestItemAge())

	mustBatch(t, s, storage.SetOperation("qmv0", item(1, 10)), storage.DeleteOperation("0"))
	require.Equal(t, 5*time.Second, s.oldestItemAge(), "item 1 is now the oldest")
	mustBatch(t, s, storage.SetOperation("qmv0", item(1, 10)), storage.DeleteOperation("1"))
	require.Zero(t, s.oldestItemAge(), "delivered: nothing waits")
	require.Empty(t, s.ages.fifo)
}

// An item stuck at the head while thousands pass behind it: the age stays its
// own, and what is remembered stays bounded by what is live.
func TestOldestItemAgeBoundedBehindAStuckItem(t *testing.T) {
	o, _ := testOptions(1 << 20)
	s := openTest(t, t.TempDir(), o)
	defer s.Close(ctx)
	c := &clock{t: time.Unix(1_000_000, 0)}
	s.ages.now = c.now
	mustBatch(t, s, storage.SetOperation("0", item(1, 8)))
	for i := 1; i <= 20_000; i++ {
		c.t = c.t.Add(time.Millisecond)
		k := strconv.Itoa(i)
		mustBatch(t, s, storage.SetOperation(k, item(i, 8)))
		mustBatch(t, s, storage.DeleteOperation(k))
		if i%1000 == 0 {
			require.Equal(t, time.Duration(i)*time.Millisecond, s.oldestItemAge())
		}
	}
	require.LessOrEqual(t, len(s.ages.fifo), 2048, "deleted items are forgotten")
}

// After a restart the items on the volume are aged from their segment's last
// write: no later than that, never from the restart.
func TestOldestItemAgeAfterRestart(t *testing.T) {
	dir := t.TempDir()
	o, _ := testOptions(64 << 10)
	s := openTest(t, dir, o)
	mustBatch(t, s, storage.SetOperation("qmv0", item(1, 10)), storage.SetOperation("7", item(2, 100)))
	require.NoError(t, s.Close(ctx))
	written := time.Now().Add(-time.Hour).Truncate(time.Second)
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, n := range names {
		require.NoError(t, os.Chtimes(dir+"/"+n.Name(), written, written))
	}

	s = openTest(t, dir, o)
	defer s.Close(ctx)
	age := s.oldestItemAge()
	require.GreaterOrEqual(t, age, time.Hour)
	require.Less(t, age, time.Hour+time.Minute)
}

// The gauge carries the exporter and signal of each exporter's client, as the
// collector's otelcol_exporter_queue_size does, and nothing for other kinds.
func TestOldestItemAgeGauge(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tt.Shutdown(context.Background()) })
	cfg := createDefaultConfig()
	cfg.Directory = t.TempDir()
	q, err := newExtension(metadatatest.NewSettings(tt), cfg, func() (uint64, string, error) { return 1 << 30, "test", nil })
	require.NoError(t, err)
	defer func() { require.NoError(t, q.Shutdown(ctx)) }()
	id := component.MustNewIDWithName("otlp_http", "default")
	logs, err := q.GetClient(ctx, component.KindExporter, id, "logs")
	require.NoError(t, err)
	_, err = q.GetClient(ctx, component.KindReceiver, component.MustNewID("otlp"), "logs")
	require.NoError(t, err)
	require.NoError(t, logs.Set(ctx, "0", item(1, 10)))

	m, err := tt.GetMetric("otelcol_queue_storage_oldest_item_age")
	require.NoError(t, err)
	dps := m.Data.(metricdata.Gauge[float64]).DataPoints
	require.Len(t, dps, 1)
	require.Positive(t, dps[0].Value)
	metadatatest.AssertEqualQueueStorageOldestItemAge(t, tt, []metricdata.DataPoint[float64]{{
		Attributes: attribute.NewSet(attribute.String("data_type", "logs"), attribute.String("exporter", "otlp_http/default")),
	}}, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreValue())
}
