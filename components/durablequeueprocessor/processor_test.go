// SPDX-License-Identifier: Apache-2.0

package durablequeueprocessor

import (
	"context"
	"errors"
	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension/queuestoragetest"
	"go.opentelemetry.io/collector/component/componenttest"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"
)

// host offers the storage extension, a real queue_storage on dir.
var storageID = queuestoragetest.ID()

// gate is the rest of the pipeline: it counts records by their sequence
// attribute and answers with err while one is set.
type gate struct {
	mu   sync.Mutex
	err  error
	seen map[int64]int
	reqs int
}

func (g *gate) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return g.err
	}
	g.reqs++
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				v, _ := lrs.At(k).Attributes().Get("seq")
				g.seen[v.Int()]++
			}
		}
	}
	return nil
}

func (*gate) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (g *gate) set(err error) {
	g.mu.Lock()
	g.err = err
	g.mu.Unlock()
}

func (g *gate) count() (records, duplicates, reqs int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range g.seen {
		records++
		duplicates += n - 1
	}
	return records, duplicates, g.reqs
}

func logs(first, n int) plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for i := first; i < first+n; i++ {
		lr := lrs.AppendEmpty()
		lr.Body().SetStr("a log line of some length, like fluent-bit sends")
		lr.Attributes().PutInt("seq", int64(i))
	}
	return ld
}

func newLogs(t *testing.T, cfg *Config, next consumer.Logs) processor.Logs {
	t.Helper()
	f := NewFactory()
	p, err := f.CreateLogs(context.Background(), processortest.NewNopSettings(f.Type()), cfg, next)
	require.NoError(t, err)
	return p
}

func testConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Storage = storageID
	cfg.FlushTimeout = 10 * time.Millisecond
	cfg.BatchItems = 50
	return cfg
}

func TestDeliversEverythingAndForgetsIt(t *testing.T) {
	for _, memory := range []int64{64 << 20, 0} {
		t.Run(map[bool]string{true: "from_memory", false: "read_back_from_disk"}[memory > 0], func(t *testing.T) {
			h, _ := queuestoragetest.Start(t, t.TempDir())
			g := &gate{seen: map[int64]int{}}
			cfg := testConfig()
			cfg.MemoryBytes = memory
			p := newLogs(t, cfg, g)
			require.NoError(t, p.Start(context.Background(), h))
			for i := range 40 {
				require.NoError(t, p.ConsumeLogs(context.Background(), logs(i*10, 10)))
			}
			require.Eventually(t, func() bool { n, _, _ := g.count(); return n == 400 }, 10*time.Second, 10*time.Millisecond)
			_, dups, reqs := g.count()
			assert.Zero(t, dups)
			assert.Less(t, reqs, 40, "requests are merged into batches of up to batch_items")
			q := p.(logsQueue).q
			require.Eventually(t, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.bytes == 0 && q.items == 0 }, 5*time.Second, 10*time.Millisecond)
			require.NoError(t, p.Shutdown(context.Background()))
		})
	}
}

func TestRestartDeliversWhatWasAcknowledged(t *testing.T) {
	dir := t.TempDir()
	g := &gate{seen: map[int64]int{}}
	g.set(errors.New("backend down"))
	h, stopStorage := queuestoragetest.Start(t, dir)
	cfg := testConfig()
	p := newLogs(t, cfg, g)
	require.NoError(t, p.Start(context.Background(), h))
	for i := range 30 {
		require.NoError(t, p.ConsumeLogs(context.Background(), logs(i*10, 10)))
	}
	q1 := p.(logsQueue).q
	q1.mu.Lock()
	heldBytes, heldItems := q1.bytes, q1.items
	q1.mu.Unlock()
	require.NoError(t, p.Shutdown(context.Background()))
	stopStorage()

	// A new process on the same volume knows what it holds before forwarding.
	h2, _ := queuestoragetest.Start(t, dir)
	p2 := newLogs(t, cfg, g)
	require.NoError(t, p2.Start(context.Background(), h2))
	q2 := p2.(logsQueue).q
	q2.mu.Lock()
	assert.Equal(t, heldBytes, q2.bytes)
	assert.Equal(t, heldItems, q2.items)
	assert.EqualValues(t, 300, q2.items)
	q2.mu.Unlock()
	g.set(nil)
	require.Eventually(t, func() bool { n, _, _ := g.count(); return n == 300 }, 10*time.Second, 10*time.Millisecond)
	_, dups, _ := g.count()
	assert.Zero(t, dups)
	require.NoError(t, p2.Shutdown(context.Background()))

	// And nothing is left for a third.
	h3, _ := queuestoragetest.Start(t, dir)
	p3 := newLogs(t, cfg, g)
	require.NoError(t, p3.Start(context.Background(), h3))
	q := p3.(logsQueue).q
	assert.Zero(t, q.items)
	assert.Zero(t, len(q.pending))
	require.NoError(t, p3.Shutdown(context.Background()))
}

func TestFullIsRetryable(t *testing.T) {
	h, _ := queuestoragetest.Start(t, t.TempDir())
	g := &gate{seen: map[int64]int{}}
	g.set(errors.New("backend down"))
	cfg := testConfig()
	cfg.MaxBytes = 4096
	cfg.MemoryBytes = 4096
	p := newLogs(t, cfg, g)
	require.NoError(t, p.Start(context.Background(), h))
	var err error
	accepted := 0
	for i := 0; err == nil; i++ {
		if err = p.ConsumeLogs(context.Background(), logs(i*10, 10)); err == nil {
			accepted++
		}
	}
	require.ErrorIs(t, err, ErrFull)
	assert.False(t, consumererror.IsPermanent(err), "a full queue must make the sender retry")
	assert.Positive(t, accepted)

	big := p.ConsumeLogs(context.Background(), logs(0, 1000))
	require.Error(t, big)
	assert.True(t, consumererror.IsPermanent(big), "a request larger than max_bytes can never fit")
	assert.Contains(t, big.Error(), "max_bytes (4096)")

	g.set(nil)
	require.Eventually(t, func() bool { n, _, _ := g.count(); return n == accepted*10 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, p.Shutdown(context.Background()))
}

func TestPermanentErrorDropsAndTransientErrorRetries(t *testing.T) {
	h, _ := queuestoragetest.Start(t, t.TempDir())
	g := &gate{seen: map[int64]int{}}
	cfg := testConfig()
	p := newLogs(t, cfg, g)
	require.NoError(t, p.Start(context.Background(), h))
	q := p.(logsQueue).q

	g.set(consumererror.NewPermanent(errors.New("bad data")))
	require.NoError(t, p.ConsumeLogs(context.Background(), logs(0, 10)))
	require.Eventually(t, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.items == 0 }, 5*time.Second, 10*time.Millisecond)

	g.set(errors.New("gave up for now"))
	require.NoError(t, p.ConsumeLogs(context.Background(), logs(100, 10)))
	time.Sleep(100 * time.Millisecond)
	g.set(nil)
	require.Eventually(t, func() bool { n, _, _ := g.count(); return n == 10 }, 10*time.Second, 10*time.Millisecond)
	g.mu.Lock()
	assert.Equal(t, 1, g.seen[100])
	assert.Zero(t, g.seen[0], "the permanently refused request is dropped")
	g.mu.Unlock()
	require.NoError(t, p.Shutdown(context.Background()))
}

func TestOneInstancePerSignalAndID(t *testing.T) {
	h, _ := queuestoragetest.Start(t, t.TempDir())
	f := NewFactory()
	cfg := testConfig()
	set := processortest.NewNopSettings(f.Type())
	a, err := f.CreateLogs(context.Background(), set, cfg, &gate{seen: map[int64]int{}})
	require.NoError(t, err)
	b, err := f.CreateLogs(context.Background(), set, cfg, &gate{seen: map[int64]int{}})
	require.NoError(t, err)
	require.NoError(t, a.Start(context.Background(), h))
	err = b.Start(context.Background(), h)
	require.ErrorContains(t, err, "used in more than one logs pipeline")
	require.NoError(t, b.Shutdown(context.Background()))
	require.NoError(t, a.Shutdown(context.Background()))
}

func TestMissingStorageIsNamed(t *testing.T) {
	cfg := testConfig()
	cfg.Storage = component.MustNewIDWithName("queue_storage", "typo")
	p := newLogs(t, cfg, &gate{seen: map[int64]int{}})
	err := p.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, `storage: extension "queue_storage/typo" is not configured`)
	require.NoError(t, p.Shutdown(context.Background()))
}

// On a full volume the sender is told to retry; deliveries still free space.
func TestVolumeFullIsRetryableAndRecovers(t *testing.T) {
	vol := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", vol).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", vol).Run() })
	h, _ := queuestoragetest.Start(t, vol, func(c *queuestorageextension.Config) { c.SegmentSize = 64 << 10 })

	g := &gate{seen: map[int64]int{}}
	g.set(errors.New("backend down"))
	p := newLogs(t, testConfig(), g)
	require.NoError(t, p.Start(context.Background(), h))
	accepted := 0
	var err error
	for ; accepted < 10000; accepted++ {
		if err = p.ConsumeLogs(context.Background(), logs(accepted*10, 10)); err != nil {
			break
		}
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "queue volume full")
	assert.False(t, consumererror.IsPermanent(err), "a full volume must make the sender retry")
	t.Logf("1 MiB volume: %d requests acknowledged, then: %v", accepted, err)

	g.set(nil)
	require.Eventually(t, func() bool { n, _, _ := g.count(); return n == accepted*10 }, 10*time.Second, 10*time.Millisecond)
	// Delivered requests were deleted and their space reclaimed.
	require.Eventually(t, func() bool {
		return p.ConsumeLogs(context.Background(), logs(1_000_000, 10)) == nil
	}, 10*time.Second, 50*time.Millisecond)
	_, dups, _ := g.count()
	assert.Zero(t, dups)
	require.NoError(t, p.Shutdown(context.Background()))
}
