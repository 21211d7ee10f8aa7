// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

// volumeShare is the share of the volume one segment may take when
// segment_size is left to the extension. A client keeps up to three segments
// beyond twice its live data (two before reclaim copies forward, one while
// rolling), so three signals cost at most 9/64 of the volume in segments, and
// a small volume (an emptyDir with a sizeLimit, a 100 MiB PVC) still holds
// queue bounds of its own size instead of being taken by 8 MiB allocations.
const volumeShare = 64

// SegmentSize is the size of the segments a queue_storage configured with
// segment_size (0: sized from the volume) allocates on a volume of volumeBytes
// (0: unknown): the configured size, or 1/64 of the volume rounded down to
// 64 KiB, between 64 KiB and 8 MiB. The startup check that queue bounds fit
// their volume (components/safeconfigconverter) counts with the same figure.
func SegmentSize(configured int64, volumeBytes uint64) int64 {
	if configured > 0 {
		return configured
	}
	if volumeBytes == 0 {
		return defaultSegmentSize
	}
	share := int64(min(volumeBytes/volumeShare, defaultSegmentSize))
	return max(minSegmentSize, share&^(minSegmentSize-1))
}
