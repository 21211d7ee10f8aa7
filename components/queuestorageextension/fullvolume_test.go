// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
)

// The tests in this file run upstream's persistent queue (exporterhelper
// v0.165.0) on the real extension on a small real volume that the queue fills.

var storageID = component.MustNewID("queue_storage")

type extHost map[component.ID]component.Component

func (h extHost) GetExtensions() map[component.ID]component.Component { return h }

// backend stands for the exporter's destination: while down, a push blocks
// (a consumer holds its request in flight); once up, it records the request.
type backend struct {
	mu        sync.Mutex
	up        chan struct{}
	inFlight  int
	delivered map[int]int
	empty     int
}

func newBackend() *backend { return &backend{up: make(chan struct{}), delivered: map[int]int{}} }

// push delivers the request when the backend is up; with recording false a
// request held while it was down fails instead (the process crashed under it).
func (b *backend) push(recording bool) func(ctx2 context.Context, ld plog.Logs) error {
	return func(_ context.Context, ld plog.Logs) error {
		b.mu.Lock()
		b.inFlight++
		b.mu.Unlock()
		<-b.up
		if !recording {
			return errors.New("the process is gone")
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if ld.LogRecordCount() == 0 {
			b.empty++ // the queue read an item that was not there
			return nil
		}
		n, err := strconv.Atoi(ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().Str())
		if err != nil {
			return err
		}
		b.delivered[n]++
		return nil
	}
}

func (b *backend) counts() (inFlight, delivered int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inFlight, len(b.delivered)
}

func logOf(i, pad int) plog.Logs {
	ld := plog.NewLogs()
	r := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	r.Body().SetStr(strconv.Itoa(i))
	r.Attributes().PutStr("pad", strings.Repeat("x", pad))
	return ld
}

// startQueue starts queue_storage on dir and a logs exporter whose sending
// queue is upstream's persistent queue on it, with consumers consumers.
func startQueue(t *testing.T, dir string, segmentSize int64, consumers int, push func(context.Context, plog.Logs) error) (exporter.Logs, storage.Extension) {
	t.Helper()
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Directory, cfg.SegmentSize = dir, segmentSize
	ext := startExt(t, f, cfg)
	q := exporterhelper.NewDefaultQueueConfig()
	q.StorageID = &storageID
	q.NumConsumers = consumers
	q.QueueSize = 1 << 30
	q.Batch = configoptional.None[exporterhelper.BatchConfig]()
	set := exportertest.NewNopSettings(exporterID.Type())
	set.ID = exporterID
	exp, err := exporterhelper.NewLogs(ctx, set, &struct{}{}, push,
		exporterhelper.WithQueue(configoptional.Some(q)), exporterhelper.WithRetry(configretry.BackOffConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Start(ctx, extHost{storageID: ext}); err != nil {
		t.Fatal(err)
	}
	return exp, ext
}

// fillVolume offers requests until the queue refuses one because the volume
// is full, and returns how many were acknowledged.
func fillVolume(t *testing.T, exp exporter.Logs, pad int) int {
	t.Helper()
	for i := 0; ; i++ {
		if err := exp.ConsumeLogs(ctx, logOf(i, pad)); err != nil {
			if !errors.Is(err, ErrVolumeFull) {
				t.Fatalf("request %d refused for another reason than a full volume: %v", i, err)
			}
			return i
		}
		if i > 1<<20 {
			t.Fatal("the volume never filled")
		}
	}
}

func stopQueue(t *testing.T, exp exporter.Logs, ext storage.Extension) {
	t.Helper()
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ext.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// awaitDelivery waits until acked requests were delivered or delivery stops
// progressing (a lost request is never delivered), and returns the count.
func awaitDelivery(b *backend, acked int) int {
	last, since := -1, time.Now()
	for {
		_, n := b.counts()
		if n >= acked {
			return n
		}
		if n != last {
			last, since = n, time.Now()
		} else if time.Since(since) > 20*time.Second {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func missing(b *backend, acked int) []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	var m []int
	for i := range acked {
		if b.delivered[i] == 0 {
			m = append(m, i)
		}
	}
	return m
}

// liveKeys is what stays in the client's directory once everything is closed.
func liveKeys(t *testing.T, dir string) map[string]int {
	t.Helper()
	live, err := Inspect(filepath.Join(dir, "exporter_otlp_http_default_logs"))
	if err != nil {
		t.Fatal(err)
	}
	return live
}

// With the backend up, a full volume drains to empty and every acknowledged
// request is delivered, at several ratios of segment to volume size and with
// small requests (the most records per byte queued).
func TestFullVolumeDrains(t *testing.T) {
	for _, c := range []struct {
		volume  string
		segment int64
		pad     int
	}{
		{"8m", 256 << 10, 100}, // 1/32
		{"4m", 1 << 20, 1000},  // 1/4
		{"3m", 1 << 20, 100},   // 1/3: three segments and nothing else
	} {
		t.Run(fmt.Sprintf("%s volume, %d KiB segments, %d-byte records", c.volume, c.segment>>10, c.pad), func(t *testing.T) {
			vol := tmpfs(t, c.volume)
			dir := filepath.Join(vol, "qs")
			b := newBackend()
			exp, ext := startQueue(t, dir, c.segment, 2, b.push(true))
			acked := fillVolume(t, exp, c.pad)
			close(b.up)
			got := awaitDelivery(b, acked)
			stopQueue(t, exp, ext)
			t.Logf("%d requests acknowledged on the full volume, %d delivered", acked, got)
			if m := missing(b, acked); len(m) > 0 {
				t.Errorf("%d of %d acknowledged requests never delivered (first: %v; %d empty requests sent)", len(m), acked, m[:min(len(m), 10)], b.empty)
			}
			if live := liveKeys(t, dir); len(live) != 1 {
				t.Errorf("after the drain the store holds %d keys, want only the queue's metadata", len(live))
			}
		})
	}
}
