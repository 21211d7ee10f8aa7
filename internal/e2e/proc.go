package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
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

// MemoryCgroup is a memory cgroup (v1 or v2) the test created, with a limit, that
// a collector can be started in (the limit then applies as in a container with
// resources.limits.memory).
type MemoryCgroup struct {
	Dir   string
	Limit int64
	v2    bool
}

// NewMemoryCgroup creates a child memory cgroup of this process's own, limited to
// limit bytes, and removes it when the test ends. It skips the test when the
// machine does not let it (not root, no writable memory controller).
func NewMemoryCgroup(t testing.TB, limit int64) *MemoryCgroup {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skipf("no /proc/self/cgroup: %v", err)
	}
	cg := &MemoryCgroup{Limit: limit}
	var parent string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[1] == "memory": // cgroup v1 (also hybrid)
			parent = filepath.Join("/sys/fs/cgroup/memory", parts[2])
		case parts[0] == "0" && parent == "":
			if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
				parent, cg.v2 = filepath.Join("/sys/fs/cgroup", parts[2]), true
			}
		}
	}
	if parent == "" {
		t.Skip("no memory cgroup controller found")
	}
	cg.Dir = filepath.Join(parent, fmt.Sprintf("otelcol-relay-reliability-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(cg.Dir, 0o755); err != nil {
		t.Skipf("cannot create a memory cgroup: %v", err)
	}
	t.Cleanup(func() {
		// Processes started in it are stopped by their own (earlier) cleanups.
		deadline := time.Now().Add(30 * time.Second)
		for os.Remove(cg.Dir) != nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
	})
	limitFile := "memory.limit_in_bytes"
	if cg.v2 {
		limitFile = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(cg.Dir, limitFile), []byte(fmt.Sprint(limit)), 0o644); err != nil {
		t.Skipf("cannot set %s: %v", limitFile, err)
	}
	if !cg.v2 {
		// No swap: the limit is the limit, as in a Kubernetes pod.
		_ = os.WriteFile(filepath.Join(cg.Dir, "memory.memsw.limit_in_bytes"), []byte(fmt.Sprint(limit)), 0o644)
	}
	return cg
}

// Start runs the collector binary with args inside the cgroup (it enters the
// cgroup before exec, so the limit applies from its first allocation) and waits
// until it is ready.
func (cg *MemoryCgroup) Start(t testing.TB, args, env []string) *Collector {
	t.Helper()
	sh := append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg.Dir, Binary(t)}, args...)
	c := StartCommand(t, "sh", sh, env)
	if err := c.WaitForOutput(readyLine, 90*time.Second); err != nil {
		t.Fatalf("collector in cgroup did not become ready: %v\n%s", err, c.Output())
	}
	return c
}

// OOMKills is how many processes the kernel OOM-killed in the cgroup.
func (cg *MemoryCgroup) OOMKills() int {
	file, key := "memory.oom_control", "oom_kill"
	if cg.v2 {
		file, key = "memory.events", "oom_kill"
	}
	raw, _ := os.ReadFile(filepath.Join(cg.Dir, file))
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// PeakUsage is the cgroup's memory high-water mark (RSS and page cache), bytes.
func (cg *MemoryCgroup) PeakUsage() int64 {
	file := "memory.max_usage_in_bytes"
	if cg.v2 {
		file = "memory.peak"
	}
	raw, _ := os.ReadFile(filepath.Join(cg.Dir, file))
	n, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	return n
}

// LogQueueBytes reads otelcol_exporter_queue_size for logs (bytes, with the
// gateway's sizer), plus otelcol_durable_queue_bytes when the relay runs
// durable_queue, from the collector's own metrics at metricsAddr, summed over
// exporters; -1 when it cannot be read.
func LogQueueBytes(metricsAddr string) float64 {
	m, err := ScrapeSelfMetrics(metricsAddr)
	if err != nil {
		return -1
	}
	v, ok := m.Sum("otelcol_exporter_queue_size", map[string]string{"data_type": "logs"})
	d, dok := m.Sum("otelcol_durable_queue_bytes", map[string]string{"data_type": "logs"})
	if !ok && !dok {
		return -1
	}
	return v + d
}

// DirBytes is the size of the files under dir (a queue directory on disk).
func DirBytes(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// MiB converts bytes to mebibytes for reports.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }

// MetricSum sums the samples of the collector's own metric name (its counter or
// gauge family) at metricsAddr; -1 when there is none.
func MetricSum(metricsAddr, name string) float64 {
	m, err := ScrapeSelfMetrics(metricsAddr)
	if err != nil {
		return -1
	}
	v, ok := m.Sum(name, nil)
	if !ok {
		return -1
	}
	return v
}
