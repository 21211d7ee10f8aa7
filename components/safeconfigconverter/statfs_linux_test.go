// SPDX-License-Identifier: Apache-2.0

package safeconfigconverter

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/testvolume"
)

// ext4 reserves blocks for root (5% by default, 25% here to make it plain); the
// collector does not run as root, so they are not room for its queues. Space the
// queue files already use still counts: a restart with a full queue must not be
// refused.
func TestVolumeSizeLeavesOutRootReserve(t *testing.T) {
	mnt := testvolume.Ext4(t, 16, 25)
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	bsize := uint64(st.Bsize)
	total, usable := st.Blocks*bsize, (st.Blocks-(st.Bfree-st.Bavail))*bsize
	size, measured, ok := volumeSize(filepath.Join(mnt, "queue"))
	if !ok || measured != mnt || size != usable {
		t.Fatalf("volumeSize = %d at %q (%v), want %d: the %d blocks of %d bytes minus the %d reserved for root",
			size, measured, ok, usable, st.Blocks, bsize, st.Bfree-st.Bavail)
	}

	// 6 MiB, twice over, fits the 16 MiB of blocks but not the ~12 MiB outside the reserve.
	cfg := parse(t, fmt.Sprintf(`
extensions:
  file_storage: {directory: %s/queue}
exporters:
  otlp_http/a:
    sending_queue: {storage: file_storage, sizer: bytes, queue_size: %d}
service:
  pipelines:
    logs: {exporters: [otlp_http/a]}
`, mnt, 6<<20))
	if need := uint64(2 * 6 << 20); need <= usable || need > total {
		t.Fatalf("test premise: need %d should lie between usable %d and total %d", need, usable, total)
	}
	errs := checkQueueVolumes(cfg, volumeSize)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "persistent queues on "+mnt+"/queue need up to 12 MiB of disk") {
		t.Fatalf("want the queue refused, got %v", errs)
	}
}
