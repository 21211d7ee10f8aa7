// SPDX-License-Identifier: Apache-2.0

package safeconfigconverter

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"

	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"
)

// diskPerQueuedByte is how much disk a byte of queue_size can take. file_storage
// keeps the queue in a bbolt file, which grows in powers of two (then in 1 GiB
// steps) and keeps freed pages, and compaction writes a full copy of that file
// beside it before swapping. Twice the bound keeps both on the volume.
const diskPerQueuedByte = 2

// fsSizer returns the size in bytes of the filesystem that holds dir, and the
// directory it was measured at (the nearest one that exists). ok is false where
// it cannot tell.
type fsSizer func(dir string) (size uint64, measured string, ok bool)

// queue_storage (components/queuestorageextension) keeps its segments within
// twice the live data plus two segments, and allocates a third when it rolls:
// twice the bound, plus three segments per signal, of the size the extension
// picks on that volume (queuestorageextension.SegmentSize: 1/64 of the volume,
// at most 8 MiB, unless segment_size is set).
const queueStorageSegments = 3

// persistentQueue is one exporter's sending queue on one file_storage or
// queue_storage volume.
type persistentQueue struct {
	owner   string // the component and the field that bounds it
	bytes   uint64
	signals []string
	// queue_storage's segment_size as configured (0: sized from the volume);
	// unused for file_storage.
	segment      uint64
	queueStorage bool
}

// checkQueueVolumes refuses persistent sending queues whose byte bounds, all of
// them together, cannot fit their file_storage volume. When the disk fills before
// a queue reaches its bound, upstream's persistent queue (exporterhelper v0.165.0,
// persistentQueue.getNextItem) deletes items it cannot update on ENOSPC: data the
// receiver has acknowledged is lost. With the bounds inside the volume, a full
// queue refuses new data with a retryable error instead, and loses nothing.
// Queues bounded in items or requests cannot be sized in bytes and are left alone.
func checkQueueVolumes(cfg map[string]any, size fsSizer) []error {
	extensions := asMap(cfg["extensions"])
	signals := exporterSignals(asMap(asMap(cfg["service"])["pipelines"]))
	// Where an extension's config leaves them out, the extension's own defaults.
	fileStorage := filestorage.NewFactory().CreateDefaultConfig().(*filestorage.Config)
	queueStorage := queuestorageextension.NewFactory().CreateDefaultConfig().(*queuestorageextension.Config)

	// volume is where a storage extension keeps its files, and queue_storage's
	// configured segment size, whether it is queue_storage, and whether it is a
	// storage extension this check knows.
	volume := func(storage string) (string, uint64, bool, bool) {
		t, _ := splitID(storage)
		ext := asMap(extensions[storage])
		dir, _ := ext["directory"].(string)
		switch t {
		case "queue_storage":
			segment := uint64(queueStorage.SegmentSize)
			if v, ok := toUint(ext["segment_size"]); ok {
				segment = v
			}
			if dir == "" {
				dir = queueStorage.Directory
			}
			return filepath.Clean(dir), segment, true, true
		case "file_storage":
			if dir == "" {
				dir = fileStorage.Directory
			}
			return filepath.Clean(dir), 0, false, true
		}
		return "", 0, false, false
	}

	byDir := map[string][]persistentQueue{}
	exporters := asMap(cfg["exporters"])
	for _, id := range slices.Sorted(maps.Keys(exporters)) {
		q := asMap(asMap(exporters[id])["sending_queue"])
		storage, _ := q["storage"].(string)
		if storage == "" || q["enabled"] == false || q["sizer"] != "bytes" || len(signals[id]) == 0 {
			continue
		}
		n, ok := toUint(q["queue_size"])
		if !ok {
			continue
		}
		if dir, segment, qs, ok := volume(storage); ok {
			byDir[dir] = append(byDir[dir], persistentQueue{"exporters::" + id + ": sending_queue::queue_size", n, signals[id], segment, qs})
		}
	}
	var errs []error
	for _, dir := range slices.Sorted(maps.Keys(byDir)) {
		total, measured, ok := size(dir)
		if !ok {
			continue
		}
		var need uint64
		var parts []string
		for _, q := range byDir[dir] {
			var segments uint64
			if q.queueStorage {
				// The segment size the extension will pick on this volume.
				segments = uint64(queuestorageextension.SegmentSize(int64(q.segment), total)) * queueStorageSegments
			}
			need += (q.bytes*diskPerQueuedByte + segments) * uint64(len(q.signals))
			parts = append(parts, fmt.Sprintf("%s %d bytes x %d signals (%s)", q.owner, q.bytes, len(q.signals), strings.Join(q.signals, ", ")))
		}
		if need > total {
			errs = append(errs, fmt.Errorf("persistent queues on %s need up to %s of disk (twice their bounds: file_storage's file and its compaction copy, queue_storage's segments before they are reclaimed), but the volume at %s holds %s; on a full volume acknowledged data would be lost, so lower the bounds or grow the volume: %s",
				dir, mib(need), measured, mib(total), strings.Join(parts, "; ")))
		}
	}
	return errs
}

// exporterSignals maps each exporter to the signals (logs, metrics, traces, ...)
// of the pipelines that send to it: an exporter keeps one queue per signal.
func exporterSignals(pipelines map[string]any) map[string][]string {
	seen := map[string]map[string]bool{}
	for pid, p := range pipelines {
		signal, _, _ := strings.Cut(pid, "/")
		for _, e := range asList(asMap(p)["exporters"]) {
			if s, ok := e.(string); ok {
				if seen[s] == nil {
					seen[s] = map[string]bool{}
				}
				seen[s][signal] = true
			}
		}
	}
	out := map[string][]string{}
	for id, set := range seen {
		for s := range set {
			out[id] = append(out[id], s)
		}
		sort.Strings(out[id])
	}
	return out
}

func toUint(v any) (uint64, bool) {
	switch n := v.(type) {
	case int:
		return uint64(n), n > 0
	case int64:
		return uint64(n), n > 0
	case uint64:
		return n, n > 0
	case float64:
		return uint64(n), n > 0
	case string:
		u, err := strconv.ParseUint(n, 10, 64)
		return u, err == nil && u > 0
	}
	return 0, false
}

func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
