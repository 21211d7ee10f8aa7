// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// trafficCase opens one storage.Client in a fresh directory.
type trafficCase struct {
	name string
	open func(b *testing.B) storage.Client
}

// trafficCases are the stores BenchmarkQueueTraffic compares; a file behind
// a build tag can add a candidate that does not ship, as pebble once was
// (docs/decisions/0014-what-the-binary-carries.md).
var trafficCases = []trafficCase{
	{"file_storage", func(b *testing.B) storage.Client {
		f := filestorage.NewFactory()
		cfg := f.CreateDefaultConfig().(*filestorage.Config)
		cfg.Directory = b.TempDir()
		return extClient(b, f, cfg)
	}},
	{"queue_storage", queueStorageCase(false)},
	{"queue_storage_fsync", queueStorageCase(true)},
}

func queueStorageCase(fsync bool) func(b *testing.B) storage.Client {
	return func(b *testing.B) storage.Client {
		cfg := createDefaultConfig()
		cfg.Directory, cfg.Fsync = b.TempDir(), fsync
		return extClient(b, NewFactory(), cfg)
	}
}

func extClient(b *testing.B, f extension.Factory, cfg component.Config) storage.Client {
	ext := startExt(b, f, cfg)
	b.Cleanup(func() { _ = ext.Shutdown(ctx) })
	cl, err := ext.GetClient(ctx, component.KindExporter, exporterID, "logs")
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

// BenchmarkQueueTraffic replays the persistent queue's storage traffic for one
// item of a 100-record request (~110 KB, otlpfixture.FluentBitLogs encoded as
// the queue encodes it: compressible as real logs are, which matters to a store
// that compresses): write, read back, delete, each with a metadata update, with
// 20 items in flight. The storage alone, per item:
//
//	go test ./components/queuestorageextension -run '^$' -bench QueueTraffic -benchtime 2000x
//
// Besides wall clock it reports the process CPU time per item (cpu-ns/op,
// background goroutines and the client's Close included, so work a store
// defers is counted) and the bytes handed to write syscalls per item
// (wchar-B/op: log, WAL, pages, flushes and compactions together).
func BenchmarkQueueTraffic(b *testing.B) {
	for _, c := range trafficCases {
		b.Run(c.name, func(b *testing.B) {
			cl := c.open(b)
			val, meta := queuedRequest(b), item(2, 40)
			b.SetBytes(int64(len(val)))
			b.ResetTimer()
			cpu0, w0 := processCPU(b), writtenBytes(b)
			for i := range b.N {
				k := strconv.Itoa(i)
				if err := cl.Batch(ctx, storage.SetOperation("qmv0", meta), storage.SetOperation(k, val)); err != nil {
					b.Fatal(err)
				}
				if i >= 20 {
					old := strconv.Itoa(i - 20)
					get := storage.GetOperation(old)
					if err := cl.Batch(ctx, storage.SetOperation("qmv0", meta), get); err != nil || len(get.Value) != len(val) {
						b.Fatal(err, len(get.Value))
					}
					if err := cl.Batch(ctx, storage.SetOperation("qmv0", meta), storage.DeleteOperation(old)); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := cl.Close(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(writtenBytes(b)-w0)/float64(b.N), "wchar-B/op")
		})
	}
}

// queuedRequest is a 100-record fluent-bit request as the persistent queue
// stores it (the logs request's protobuf).
func queuedRequest(b *testing.B) []byte {
	val, err := (&plog.ProtoMarshaler{}).MarshalLogs(otlpfixture.FluentBitLogs(100, 0))
	if err != nil {
		b.Fatal(err)
	}
	return val
}

// processCPU is the user + system CPU time of the whole process.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writtenBytes is the process's wchar from /proc/self/io: every byte passed to
// write, pwrite and pwritev, whether or not it reached the disk yet.
func writtenBytes(b *testing.B) int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("wchar: ")); ok {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no wchar in /proc/self/io: %v", sc.Err())
	return 0
}
