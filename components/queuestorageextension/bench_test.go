package queuestorageextension

import (
	"fmt"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// BenchmarkQueueTraffic replays the persistent queue's storage traffic for one
// item of a 100-record request (~110 KB): write, read back, delete, each with a
// metadata update, with 20 items in flight. The storage alone, per item:
//
//	go test ./components/queuestorageextension -run '^$' -bench QueueTraffic -benchtime 2000x
func BenchmarkQueueTraffic(b *testing.B) {
	fs := func(b *testing.B) (extension.Factory, component.Config) {
		f := filestorage.NewFactory()
		cfg := f.CreateDefaultConfig().(*filestorage.Config)
		cfg.Directory = b.TempDir()
		return f, cfg
	}
	qs := func(fsync bool) func(b *testing.B) (extension.Factory, component.Config) {
		return func(b *testing.B) (extension.Factory, component.Config) {
			cfg := createDefaultConfig()
			cfg.Directory, cfg.Fsync = b.TempDir(), fsync
			return NewFactory(), cfg
		}
	}
	for _, c := range []struct {
		name string
		mk   func(b *testing.B) (extension.Factory, component.Config)
	}{{"file_storage", fs}, {"queue_storage", qs(false)}, {"queue_storage_fsync", qs(true)}} {
		b.Run(c.name, func(b *testing.B) {
			f, cfg := c.mk(b)
			ext := startExt(b, f, cfg)
			defer ext.Shutdown(ctx)
			cl, err := ext.GetClient(ctx, component.KindExporter, exporterID, "logs")
			if err != nil {
				b.Fatal(err)
			}
			val, meta := item(1, 110_000), item(2, 40)
			b.SetBytes(int64(len(val)))
			b.ResetTimer()
			for i := range b.N {
				k := fmt.Sprint(i)
				if err := cl.Batch(ctx, storage.SetOperation("qmv0", meta), storage.SetOperation(k, val)); err != nil {
					b.Fatal(err)
				}
				if i >= 20 {
					old := fmt.Sprint(i - 20)
					get := storage.GetOperation(old)
					if err := cl.Batch(ctx, storage.SetOperation("qmv0", meta), get); err != nil || len(get.Value) != len(val) {
						b.Fatal(err)
					}
					if err := cl.Batch(ctx, storage.SetOperation("qmv0", meta), storage.DeleteOperation(old)); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
