// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter // import "github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter"

import (
	"fmt"
)

// Counting the items of a serialized Export<Signal>ServiceRequest without
// decoding it into pdata: only the tags and lengths on the path to the items
// are read, every other field is skipped by its wire type.
//
// The field numbers are OTLP's (opentelemetry-proto, as in pdata v1.71.0's
// generated code, internal/generated_proto_*.go):
//
//	Export{Logs,Trace}ServiceRequest 1 resource_{logs,spans}
//	  Resource{Logs,Spans}           2 scope_{logs,spans}  (1000: deprecated instrumentation_library_*)
//	    Scope{Logs,Spans}            2 log_records / spans  <- one item each
//	ExportMetricsServiceRequest      1 resource_metrics
//	  ResourceMetrics                2 scope_metrics       (1000: deprecated)
//	    ScopeMetrics                 2 metrics
//	      Metric                     5 gauge, 7 sum, 9 histogram, 10 exponential_histogram, 11 summary
//	        Gauge, Sum, ...          1 data_points          <- one item each
//
// The rules follow pdata's decoder so that the count is ItemsCount's after a
// pdata decode (FuzzCountItems checks it): a resource's deprecated field 1000
// counts only when it has no field 2 (pdata's otlp.Migrate*), and a metric's
// data is its last data field (a oneof: pdata keeps the last one). Varints,
// tags and unknown fields (groups included) are read as pdata's
// internal/proto reads them. The counter is never stricter than pdata on what
// it reads; it reads less (the records themselves are not looked into).

const (
	wtVarint     = 0
	wtI64        = 1
	wtLen        = 2
	wtStartGroup = 3
	wtEndGroup   = 4
	wtI32        = 5
)

// wireErr says what is wrong and where (an offset into the item).
type wireErr struct {
	off  int
	what string
}

func (e *wireErr) Error() string { return fmt.Sprintf("%s at offset %d", e.what, e.off) }

func errAt(off int, format string, args ...any) error {
	return &wireErr{off: off, what: fmt.Sprintf(format, args...)}
}

// varint reads a varint in b[pos:end] as pdata's proto.ConsumeVarint does
// (ten bytes at most, the tenth taken whole).
func varint(b []byte, pos, end int) (uint64, int, error) {
	start := pos
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, 0, errAt(start, "varint longer than 10 bytes")
		}
		if pos >= end {
			return 0, 0, errAt(start, "truncated varint")
		}
		c := b[pos]
		pos++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, pos, nil
		}
	}
}

// tag reads a field tag as pdata's proto.ConsumeTag does.
func tag(b []byte, pos, end int) (int32, int, int, error) {
	t, next, err := varint(b, pos, end)
	if err != nil {
		return 0, 0, 0, err
	}
	field := int32(t >> 3) // truncated as pdata truncates it
	if field <= 0 {
		return 0, 0, 0, errAt(pos, "invalid field number %d", field)
	}
	return field, int(t & 7), next, nil
}

// length reads a length prefix and returns the bounds of the value, which
// must lie within end.
func length(b []byte, pos, end int) (int, int, error) {
	n, start, err := varint(b, pos, end)
	if err != nil {
		return 0, 0, err
	}
	if n > uint64(end-start) {
		return 0, 0, errAt(pos, "length %d runs past the end of its message (%d bytes left)", n, end-start)
	}
	return start, start + int(n), nil
}

// skip skips a field's value of wire type wt, as pdata's
// proto.ConsumeUnknown does, quirks included: inside a group it returns after
// the first field that is not a group (the rest of the group is then read as
// fields of the enclosing message, and its end tag refused), and an end tag
// that is the message's last byte is refused. Groups are deprecated and never
// written by an OTLP encoder; doing as pdata does keeps the two in agreement.
func skip(b []byte, pos, end, wt int) (int, error) {
	depth := 0
	for {
		if pos >= end {
			return 0, errAt(pos, "field value missing at the end of its message")
		}
		switch wt {
		case wtVarint:
			_, next, err := varint(b, pos, end)
			return next, err
		case wtI64, wtI32:
			n := 8
			if wt == wtI32 {
				n = 4
			}
			if end-pos < n {
				return 0, errAt(pos, "truncated %d-byte value", n)
			}
			return pos + n, nil
		case wtLen:
			_, next, err := length(b, pos, end)
			return next, err
		case wtStartGroup:
			depth++
		case wtEndGroup:
			if depth == 0 {
				return 0, errAt(pos, "end of group without a start")
			}
			depth--
		default:
			return 0, errAt(pos, "invalid wire type %d", wt)
		}
		if depth == 0 {
			return pos, nil
		}
		var err error
		if _, wt, pos, err = tag(b, pos, end); err != nil {
			return 0, err
		}
	}
}

// fields calls visit with the bounds of every length-delimited field of
// b[pos:end] whose number want accepts, and skips the others. A wanted field
// of another wire type is an error (pdata refuses it too).
func fields(b []byte, pos, end int, want func(int32) bool, visit func(field int32, start, end int) error) error {
	for pos < end {
		field, wt, next, err := tag(b, pos, end)
		if err != nil {
			return err
		}
		if !want(field) {
			if pos, err = skip(b, next, end, wt); err != nil {
				return err
			}
			continue
		}
		if wt != wtLen {
			return errAt(pos, "field %d has wire type %d, want %d (length-delimited)", field, wt, wtLen)
		}
		s, e, err := length(b, next, end)
		if err != nil {
			return err
		}
		if err := visit(field, s, e); err != nil {
			return err
		}
		pos = e
	}
	return nil
}

func is(n int32) func(int32) bool { return func(f int32) bool { return f == n } }

// countItems counts the items of a serialized Export<Signal>ServiceRequest;
// leaf counts the items of one scope entry (b[start:end]).
func countItems(b []byte, leaf func(b []byte, start, end int) (int, error)) (int, error) {
	total := 0
	err := fields(b, 0, len(b), is(1), func(_ int32, s, e int) error {
		// A resource: scopes (2), or the deprecated scopes (1000) when it
		// has no field 2.
		var cur, deprecated, scopes int
		err := fields(b, s, e, func(f int32) bool { return f == 2 || f == 1000 }, func(f int32, s, e int) error {
			n, err := leaf(b, s, e)
			if f == 2 {
				cur += n
				scopes++
			} else {
				deprecated += n
			}
			return err
		})
		if scopes == 0 {
			cur = deprecated
		}
		total += cur
		return err
	})
	return total, err
}

// countRecords counts a scope's log records or spans (field 2).
func countRecords(b []byte, start, end int) (int, error) { return countFields(b, start, end, 2) }

// countMetricPoints counts a scope's data points: metrics (2), each of which
// counts the data points (1) of its last data field.
func countMetricPoints(b []byte, start, end int) (int, error) {
	total := 0
	err := fields(b, start, end, is(2), func(_ int32, s, e int) error {
		last := 0
		err := fields(b, s, e, isMetricData, func(_ int32, s, e int) error {
			var err error
			last, err = countFields(b, s, e, 1)
			return err
		})
		total += last
		return err
	})
	return total, err
}

func isMetricData(f int32) bool { return f == 5 || f == 7 || f == 9 || f == 10 || f == 11 }

// countFields counts the occurrences of a length-delimited field.
func countFields(b []byte, start, end int, field int32) (int, error) {
	n := 0
	err := fields(b, start, end, is(field), func(int32, int, int) error { n++; return nil })
	return n, err
}

func countLogRecords(b []byte) (int, error) { return countItems(b, countRecords) }
func countSpans(b []byte) (int, error)      { return countItems(b, countRecords) }
func countDataPoints(b []byte) (int, error) { return countItems(b, countMetricPoints) }
