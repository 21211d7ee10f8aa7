// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

func TestSegmentSize(t *testing.T) {
	for _, c := range []struct {
		configured int64
		volume     uint64
		want       int64
	}{
		{1 << 20, 8 << 20, 1 << 20}, // configured: taken as it is
		{0, 0, 8 << 20},             // volume unknown: the largest
		{0, 1 << 20, 64 << 10},      // never under the minimum
		{0, 8 << 20, 128 << 10},     // 1/64 of the volume
		{0, 100 << 20, 1600 << 10},  // 1/64, a multiple of 64 KiB
		{0, 100<<20 + 12345, 1600 << 10},
		{0, 512 << 20, 8 << 20},
		{0, 20 << 30, 8 << 20}, // never over 8 MiB
	} {
		if got := SegmentSize(c.configured, c.volume); got != c.want {
			t.Errorf("SegmentSize(%d, %d) = %d, want %d", c.configured, c.volume, got, c.want)
		}
	}
}

// tmpfs mounts a tmpfs of size (mount's -o size=) for the test (root only).
func tmpfs(t *testing.T, size string) string {
	t.Helper()
	vol := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", vol).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", vol).Run() })
	return vol
}

// Left to the extension, segments are sized from the volume the directory is
// on (created if missing), as the startup check counts them: an 8 MiB volume
// gets 128 KiB segments, not 8 MiB ones it could hold only one of.
func TestSegmentsSizedFromVolume(t *testing.T) {
	vol := tmpfs(t, "8m")
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Directory = filepath.Join(vol, "queue", "qs")
	ext := startExt(t, f, cfg)
	defer shutdownExt(t, ext)
	for _, signal := range []string{"logs", "metrics", "traces"} {
		c, err := ext.GetClient(ctx, component.KindExporter, exporterID, signal)
		if err != nil {
			t.Fatalf("%s on an 8 MiB volume: %v", signal, err)
		}
		s := c.(*trackedClient).store
		mustBatch(t, s, storage.SetOperation("qmv0", item(1, 40)), storage.SetOperation("0", item(1, 1000)))
		mustBatch(t, s, storage.SetOperation("qmv0", item(2, 40)), storage.SetOperation("1", item(2, 200<<10)))
	}
	segs, _ := filepath.Glob(filepath.Join(cfg.Directory, "*", "*.seg"))
	// Per client, a 128 KiB segment with the small item, then one of its own
	// for the 200 KiB item (larger than a segment) with the reserve after it.
	small, large := 0, 0
	for _, p := range segs {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		switch n := st.Size(); {
		case n == 128<<10:
			small++
		case n > 200<<10+reserve && n < 200<<10+reserve+1024:
			large++
		default:
			t.Errorf("%s: %d bytes, want 128 KiB or 200 KiB plus the reserve", p, n)
		}
	}
	if small != 3 || large != 3 {
		t.Errorf("on an 8 MiB volume: %d segments of 128 KiB and %d of the item's size, want 3 and 3", small, large)
	}
}
