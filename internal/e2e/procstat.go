// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times; it is 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// ProcStat is one reading of a process's CPU time and memory.
type ProcStat struct {
	CPU time.Duration // user + system
	RSS int64         // VmRSS, bytes
	HWM int64         // VmHWM (peak RSS so far), bytes
	// Anon is RssAnon: the heap and stacks, without mapped files. The
	// persistent queue's bbolt file is memory-mapped, so VmRSS also counts
	// page cache the kernel reclaims under a cgroup limit.
	Anon int64
}

// ReadProc reads /proc/<pid>/stat and /proc/<pid>/status.
func ReadProc(pid int) (ProcStat, error) {
	var st ProcStat
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, err
	}
	// The command name may contain spaces; the fields after it are fixed.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return st, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return st, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	st.CPU = time.Duration(utime+stime) * time.Second / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			st.RSS = kib(line)
		case strings.HasPrefix(line, "VmHWM:"):
			st.HWM = kib(line)
		case strings.HasPrefix(line, "RssAnon:"):
			st.Anon = kib(line)
		}
	}
	return st, nil
}

func kib(line string) int64 {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n << 10
}

// Sample is one point of a ProcSampler's series.
type Sample struct {
	At time.Duration // since the sampler started
	ProcStat
}

// ProcSampler reads a process's CPU and RSS at a fixed interval until stopped.
type ProcSampler struct {
	pid      int
	start    time.Time
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	samples  []Sample
	peak     int64
	peakAnon int64
}

// SampleProc starts sampling pid every interval.
func SampleProc(pid int, interval time.Duration) *ProcSampler {
	p := &ProcSampler{pid: pid, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			p.sample()
			select {
			case <-p.stop:
				p.sample()
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *ProcSampler) sample() {
	st, err := ReadProc(p.pid)
	if err != nil {
		return // the process is gone; keep what was read
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.samples = append(p.samples, Sample{At: time.Since(p.start), ProcStat: st})
	p.peak = max(p.peak, st.RSS, st.HWM)
	p.peakAnon = max(p.peakAnon, st.Anon)
}

// Stop ends sampling and returns the series.
func (p *ProcSampler) Stop() []Sample {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	return p.Samples()
}

// Samples returns the series so far.
func (p *ProcSampler) Samples() []Sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Sample(nil), p.samples...)
}

// PeakRSS is the highest RSS (or kernel high-water mark) seen so far.
func (p *ProcSampler) PeakRSS() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

// PeakAnon is the highest anonymous RSS (heap, stacks) seen so far.
func (p *ProcSampler) PeakAnon() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peakAnon
}
