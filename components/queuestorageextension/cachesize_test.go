// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension/internal/metadata"
	"github.com/otelcol-relay/otelcol-relay/internal/memcgroup"
)

// In a real 512 MiB memory cgroup, the StatefulSet's limit, the factory sizes
// a 6% cache from it, as memory_limiter and gomemlimit read the same limit.
func TestCacheFollowsRealMemoryCgroup(t *testing.T) {
	cg := memcgroup.New(t, 512<<20)
	argv := cg.Command(os.Args[0], "-test.run=^TestCacheSizeHelper$", "-test.v")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "QUEUE_STORAGE_CACHE_HELPER="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "CACHE_BYTES=32212254\n") {
		t.Fatalf("want CACHE_BYTES=32212254 (6%% of 512 MiB) in:\n%s", out)
	}
}

func TestCacheSizeHelper(t *testing.T) {
	dir := os.Getenv("QUEUE_STORAGE_CACHE_HELPER")
	if dir == "" {
		t.Skip("run by TestCacheFollowsRealMemoryCgroup inside a memory cgroup")
	}
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Directory, cfg.MemoryCachePercentage = dir, 6
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
	if err != nil {
		t.Fatal(err)
	}
	q := ext.(*queueStorage)
	fmt.Printf("CACHE_BYTES=%d\n", q.cache.max)
}
