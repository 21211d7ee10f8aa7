// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// On-disk record (little endian), one per storage.Client Batch/Set/Delete:
//
//	[0:4]  CRC-32C of bytes [4:8+n]
//	[4:8]  n, the body length (> 0)
//	[8:8+n] body: one or more operations, each
//	        1 byte type (opSet, opDelete, opLink), uvarint key length, key,
//	        for opSet: uvarint value length, value,
//	        for opLink: uvarint segment id, uvarint offset, uvarint length
//
// One record holds a whole batch, so a batch is applied after a crash entirely
// or not at all: the persistent queue's metadata and the item it describes are
// never out of step. A record whose CRC does not match ends the segment. Zero
// bytes after the last record (preallocated space) read as n == 0: the end.
const headerLen = 8

const (
	opSet    byte = 1
	opDelete byte = 2
	// opLink sets a key to a value already written in a segment (of a key
	// since deleted): a value offered again under a new key on a full
	// volume costs a few bytes, not its size.
	opLink byte = 3
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxRecordLen bounds n so a corrupted length field cannot make recovery
// allocate gigabytes. A store may be given a lower bound (storeOptions), never
// a higher one, so n always fits the 32-bit length field.
const maxRecordLen = 1 << 30

// errRecordTooLarge refuses a write whose record the store could not read
// back at the next start.
var errRecordTooLarge = errors.New("queue_storage: record too large")

var (
	errEndOfData = errors.New("end of data")
	errTorn      = errors.New("record runs past the end of the segment")
	errChecksum  = errors.New("checksum mismatch")
)

// op is one decoded operation; value aliases the record buffer.
type op struct {
	typ   byte
	key   string
	value []byte
	// owned: value was handed off to the store (components/internal/handoff),
	// which may keep it without a copy.
	owned bool
	// valueOff is the offset of value within the record.
	valueOff int
	// For opLink: where the value is.
	linkSeg          uint64
	linkOff, linkLen int64
}

// recordParts lays out the record for ops as consecutive parts that alias the
// values, so a large value is written (pwritev) without being copied into a
// record buffer first. It returns the parts, the record's length and the
// offset of each set operation's value within the record (-1 for deletes), or
// errRecordTooLarge when the body would exceed limit bytes (recovery rejects
// such a record, and the length field could not hold it above 4 GiB).
func recordParts(ops []op, limit int) ([][]byte, int, []int, error) {
	meta := make([]byte, headerLen, headerLen+len(ops)*(1+2*binary.MaxVarintLen64+16))
	parts := make([][]byte, 0, 2*len(ops)+1)
	offs := make([]int, len(ops))
	total := headerLen
	for i, o := range ops {
		before := len(meta)
		meta = append(meta, o.typ)
		meta = binary.AppendUvarint(meta, uint64(len(o.key)))
		meta = append(meta, o.key...)
		offs[i] = -1
		if o.typ == opSet {
			meta = binary.AppendUvarint(meta, uint64(len(o.value)))
		}
		if o.typ == opLink {
			meta = binary.AppendUvarint(meta, o.linkSeg)
			meta = binary.AppendUvarint(meta, uint64(o.linkOff))
			meta = binary.AppendUvarint(meta, uint64(o.linkLen))
		}
		total += len(meta) - before
		if o.typ == opSet {
			offs[i] = total
			parts = append(parts, meta[:len(meta):len(meta)], o.value)
			total += len(o.value)
			// Later metadata goes to a new array: appending to meta must
			// not move the bytes the parts above point to.
			meta = make([]byte, 0, cap(meta)-len(meta)+16)
		}
	}
	if len(meta) > 0 {
		parts = append(parts, meta)
	}
	if n := total - headerLen; n > limit || uint64(n) > math.MaxUint32 {
		return nil, 0, nil, fmt.Errorf("%w: %d bytes in %d operations, above the limit of %d bytes", errRecordTooLarge, n, len(ops), limit)
	}
	head := parts[0]
	binary.LittleEndian.PutUint32(head[4:8], uint32(total-headerLen))
	crc := crc32.Update(0, castagnoli, head[4:])
	for _, p := range parts[1:] {
		crc = crc32.Update(crc, castagnoli, p)
	}
	binary.LittleEndian.PutUint32(head[0:4], crc)
	return parts, total, offs, nil
}

// recordLen reads the header at the start of b: the whole record's length, or
// errEndOfData (zeros: nothing was written here), errTorn (the record does not
// fit in b), or an error for a length that cannot be (above limit).
func recordLen(b []byte, limit int) (int, error) {
	if len(b) < headerLen {
		if allZero(b) {
			return 0, errEndOfData
		}
		return 0, errTorn
	}
	n := binary.LittleEndian.Uint32(b[4:8])
	if n == 0 {
		if binary.LittleEndian.Uint32(b[0:4]) == 0 {
			return 0, errEndOfData
		}
		return 0, fmt.Errorf("%w: zero length with checksum %#x", errChecksum, binary.LittleEndian.Uint32(b[0:4]))
	}
	if int64(n) > int64(limit) {
		return 0, fmt.Errorf("%w: length %d exceeds %d", errChecksum, n, limit)
	}
	if int(n)+headerLen > len(b) {
		return 0, errTorn
	}
	return int(n) + headerLen, nil
}

// decodeRecord checks and decodes the record at the start of b, whose body
// may be at most limit bytes. It returns the operations (aliasing b) and the
// record's length.
func decodeRecord(b []byte, limit int) ([]op, int, error) {
	l, err := recordLen(b, limit)
	if err != nil {
		return nil, 0, err
	}
	rec := b[:l]
	if got, want := crc32.Checksum(rec[4:], castagnoli), binary.LittleEndian.Uint32(rec[0:4]); got != want {
		return nil, 0, fmt.Errorf("%w: stored %#x, computed %#x", errChecksum, want, got)
	}
	var ops []op
	p := headerLen
	for p < l {
		typ := rec[p]
		p++
		if typ != opSet && typ != opDelete && typ != opLink {
			return nil, 0, fmt.Errorf("%w: unknown operation type %d at byte %d", errChecksum, typ, p-1)
		}
		kl, n := binary.Uvarint(rec[p:])
		if n <= 0 || kl > uint64(l-p-n) {
			return nil, 0, fmt.Errorf("%w: bad key length at byte %d", errChecksum, p)
		}
		p += n
		o := op{typ: typ, key: string(rec[p : p+int(kl)]), valueOff: -1}
		p += int(kl)
		if typ == opSet {
			vl, n := binary.Uvarint(rec[p:])
			if n <= 0 || vl > uint64(l-p-n) {
				return nil, 0, fmt.Errorf("%w: bad value length at byte %d", errChecksum, p)
			}
			p += n
			o.valueOff = p
			o.value = rec[p : p+int(vl) : p+int(vl)]
			p += int(vl)
		}
		if typ == opLink {
			var v [3]uint64
			for j := range v {
				x, n := binary.Uvarint(rec[p:l])
				if n <= 0 || (j > 0 && x >= 1<<62) {
					return nil, 0, fmt.Errorf("%w: bad link at byte %d", errChecksum, p)
				}
				v[j] = x
				p += n
			}
			o.linkSeg, o.linkOff, o.linkLen = v[0], int64(v[1]), int64(v[2])
		}
		ops = append(ops, o)
	}
	if len(ops) == 0 {
		return nil, 0, fmt.Errorf("%w: record without operations", errChecksum)
	}
	return ops, l, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
