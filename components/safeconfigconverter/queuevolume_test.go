// SPDX-License-Identifier: Apache-2.0

package safeconfigconverter

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/confmap"
)

// otlp_http_wire/b: the rule is not about the type, any persistent queue counts.
const queueConfig = `
extensions:
  file_storage: {directory: /pvc/queue}
exporters:
  otlp_http/a:
    sending_queue: {storage: file_storage, sizer: bytes, queue_size: 268435456}
  otlp_http_wire/b:
    sending_queue: {storage: file_storage, sizer: bytes, queue_size: 268435456}
  otlp_http/items:
    sending_queue: {storage: file_storage, queue_size: 1000000}
  otlp_http/memory:
    sending_queue: {sizer: bytes, queue_size: 99999999999}
service:
  pipelines:
    logs: {exporters: [otlp_http/a, otlp_http_wire/b, otlp_http/items, otlp_http/memory]}
    metrics: {exporters: [otlp_http/a]}
    metrics/federation: {exporters: [otlp_http/a]}
`

func parse(t *testing.T, s string) map[string]any {
	t.Helper()
	ret, err := confmap.NewRetrievedFromYAML([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := ret.AsRaw()
	if err != nil {
		t.Fatal(err)
	}
	return raw.(map[string]any)
}

func fixedSize(gib uint64) fsSizer {
	return func(string) (uint64, string, bool) { return gib << 30, "/pvc", true }
}

func TestQueueVolumes(t *testing.T) {
	cfg := parse(t, queueConfig)
	// a: 256 MiB x 2 signals (logs, metrics: federation is the same metrics
	// queue) + b: 256 MiB x 1, twice over = 1.5 GiB. Item-bounded and in-memory
	// queues cannot fill the disk by bytes and are not counted.
	if errs := checkQueueVolumes(cfg, fixedSize(2)); len(errs) != 0 {
		t.Fatalf("1.5 GiB on 2 GiB: %v", errs)
	}
	errs := checkQueueVolumes(cfg, fixedSize(1))
	if len(errs) != 1 {
		t.Fatalf("1.5 GiB on 1 GiB: want one error, got %v", errs)
	}
	for _, want := range []string{
		"persistent queues on /pvc/queue need up to 1536 MiB of disk",
		"the volume at /pvc holds 1024 MiB",
		"exporters::otlp_http/a: sending_queue::queue_size 268435456 bytes x 2 signals (logs, metrics)",
		"exporters::otlp_http_wire/b: sending_queue::queue_size 268435456 bytes x 1 signals (logs)",
	} {
		if !strings.Contains(errs[0].Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, errs[0])
		}
	}
	if strings.Contains(errs[0].Error(), "otlp_http/items") || strings.Contains(errs[0].Error(), "otlp_http/memory") {
		t.Errorf("counted a queue that is not bounded in bytes on disk: %v", errs[0])
	}
}

func TestQueueVolumesUnknownSizeIsNotAnError(t *testing.T) {
	unknown := func(string) (uint64, string, bool) { return 0, "", false }
	if errs := checkQueueVolumes(parse(t, queueConfig), unknown); len(errs) != 0 {
		t.Fatal(errs)
	}
}

func TestQueueSizeFromEnvString(t *testing.T) {
	cfg := parse(t, strings.Replace(queueConfig, "queue_size: 268435456}\n  otlp_http_wire/b", "queue_size: \"1073741824\"}\n  otlp_http_wire/b", 1))
	if errs := checkQueueVolumes(cfg, fixedSize(4)); len(errs) != 1 {
		t.Fatalf("1 GiB x 2 signals + 256 MiB, twice over, on 4 GiB: want an error, got %v", errs)
	}
}

func TestVolumeSizeMeasuresNearestExistingDirectory(t *testing.T) {
	dir := t.TempDir()
	size, measured, ok := volumeSize(filepath.Join(dir, "not", "yet", "created"))
	if !ok || size == 0 || measured != dir {
		t.Fatalf("volumeSize: %d %q %v, want the size of the filesystem at %q", size, measured, ok, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "not")); !os.IsNotExist(err) {
		t.Fatal("volumeSize must not create directories")
	}
}

// queue_storage volumes are checked too: twice the bound plus three segments
// per signal.
func TestQueueVolumesQueueStorage(t *testing.T) {
	cfg := parse(t, `
extensions:
  queue_storage: {directory: /pvc/queue, segment_size: 268435456}
exporters:
  otlp_http/a:
    sending_queue: {storage: queue_storage, sizer: bytes, queue_size: 268435456}
service:
  pipelines:
    logs: {exporters: [otlp_http/a]}
    metrics: {exporters: [otlp_http/a]}
`)
	// (256 MiB x 2 + 256 MiB x 3) x 2 signals = 2560 MiB.
	if errs := checkQueueVolumes(cfg, fixedSize(3)); len(errs) != 0 {
		t.Fatalf("2.5 GiB on 3 GiB: %v", errs)
	}
	errs := checkQueueVolumes(cfg, fixedSize(2))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "persistent queues on /pvc/queue need up to 2560 MiB of disk") {
		t.Fatalf("2.5 GiB on 2 GiB: want one error naming 2560 MiB, got %v", errs)
	}
}

// Left to queue_storage, segments are sized from the volume as the extension
// sizes them (1/64 of it, at most 8 MiB): a small volume holds bounds of
// nearly its own size instead of being taken by 8 MiB segments.
func TestQueueVolumesQueueStorageSegmentsFromVolume(t *testing.T) {
	const queued = `
extensions:
  queue_storage: {directory: /vol/queue}
exporters:
  otlp_http/a:
    sending_queue: {storage: queue_storage, sizer: bytes, queue_size: %d}
service:
  pipelines:
    logs: {exporters: [otlp_http/a]}
    metrics: {exporters: [otlp_http/a]}
    traces: {exporters: [otlp_http/a]}
`
	mib8 := func(string) (uint64, string, bool) { return 8 << 20, "/vol", true }
	// (1 MiB x 2 + 128 KiB x 3) x 3 signals = 7.125 MiB on 8 MiB.
	if errs := checkQueueVolumes(parse(t, fmt.Sprintf(queued, 1<<20)), mib8); len(errs) != 0 {
		t.Fatalf("1 MiB bounds on an 8 MiB volume: %v", errs)
	}
	// (1.25 MiB x 2 + 128 KiB x 3) x 3 signals = 8.625 MiB.
	errs := checkQueueVolumes(parse(t, fmt.Sprintf(queued, 5<<18)), mib8)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "persistent queues on /vol/queue need up to 9 MiB of disk") {
		t.Fatalf("1.25 MiB bounds on an 8 MiB volume: want one error naming 9 MiB, got %v", errs)
	}
	// On a large volume the segments are 8 MiB: (256 MiB x 2 + 8 MiB x 3) x 3 = 1608 MiB.
	errs = checkQueueVolumes(parse(t, fmt.Sprintf(queued, 256<<20)), fixedSize(1))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "need up to 1608 MiB of disk") {
		t.Fatalf("256 MiB bounds on 1 GiB: want one error naming 1608 MiB, got %v", errs)
	}
}
