// SPDX-License-Identifier: Apache-2.0

package otlpfixture

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
)

// countSeqs notes the sequence numbers of ld (MaxSeq); the caller holds s.mu.
func (s *Sink) countSeqs(ld plog.Logs) {
	now := time.Now().UnixNano()
	forEachRecord(ld, func(lr plog.LogRecord) {
		v, ok := lr.Attributes().Get(SeqAttr)
		if !ok || v.Int() < 0 || v.Int() >= int64(len(s.seqCount)) {
			return
		}
		seq := v.Int()
		if s.seqCount[seq] == 0 {
			s.seqFirst[seq] = now
		}
		if s.seqCount[seq] < 255 {
			s.seqCount[seq]++
		}
	})
}

// FirstArrival is when seq first arrived (unix nanos), or 0; it needs MaxSeq.
func (s *Sink) FirstArrival(seq int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq < 0 || seq >= int64(len(s.seqFirst)) {
		return 0
	}
	return s.seqFirst[seq]
}

// SeqCounts maps each sequence number (SeqAttr) to how often it arrived.
func (s *Sink) SeqCounts() map[int64]int {
	counts := map[int64]int{}
	if s.seqCount != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		for seq, n := range s.seqCount {
			if n > 0 {
				counts[int64(seq)] = int(n)
			}
		}
		return counts
	}
	for _, ld := range s.Logs() {
		forEachRecord(ld, func(lr plog.LogRecord) {
			if v, ok := lr.Attributes().Get(SeqAttr); ok {
				counts[v.Int()]++
			}
		})
	}
	return counts
}

// LossReport compares what arrived against the sequence numbers in acked.
type LossReport struct {
	Acked, Received, Missing, Duplicated int
}

func (r LossReport) String() string {
	return fmt.Sprintf("acked=%d received=%d missing=%d duplicated=%d", r.Acked, r.Received, r.Missing, r.Duplicated)
}

// Loss counts which acknowledged sequence numbers are missing or duplicated.
func (s *Sink) Loss(acked []int64) LossReport {
	count, received := s.seqCounter()
	r := LossReport{Acked: len(acked), Received: received}
	for _, seq := range acked {
		switch c := count(seq); {
		case c == 0:
			r.Missing++
		case c > 1:
			r.Duplicated += c - 1
		}
	}
	return r
}

// seqCounter returns how often each sequence number arrived and how many
// records with one arrived in all, read from the counters with MaxSeq (no map
// of millions of entries) or from the records.
func (s *Sink) seqCounter() (count func(int64) int, received int) {
	if s.seqCount == nil {
		counts := s.SeqCounts()
		for _, n := range counts {
			received += n
		}
		return func(seq int64) int { return counts[seq] }, received
	}
	s.mu.Lock()
	snapshot := append([]uint8(nil), s.seqCount...)
	s.mu.Unlock()
	for _, n := range snapshot {
		received += int(n)
	}
	return func(seq int64) int {
		if seq < 0 || seq >= int64(len(snapshot)) {
			return 0
		}
		return int(snapshot[seq])
	}, received
}

func forEachRecord(ld plog.Logs, f func(plog.LogRecord)) {
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				f(lrs.At(k))
			}
		}
	}
}
