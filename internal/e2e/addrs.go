// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// Ports and loopback addresses handed to tests. Each is drawn at random, checked
// bindable, and never handed out twice in one test process: two endpoints of one
// collector, or two pods of one test, can otherwise draw the same value and fail
// (or, for pod IPs, silently associate with the wrong pod).
var issued = struct {
	sync.Mutex
	ports map[int]bool
	ips   map[netip.Addr]bool
}{ports: map[int]bool{}, ips: map[netip.Addr]bool{}}

// Ports below Linux's ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 by
// default): the kernel never gives these to an outgoing connection or to another
// listener on :0 between the check here and the collector's own bind.
const (
	minTestPort = 20000
	maxTestPort = 32767
)

// FreePort returns a loopback TCP port that was free a moment ago and that no other
// call in this process has returned.
func FreePort(t tb.T) int {
	t.Helper()
	issued.Lock()
	defer issued.Unlock()
	for range 1000 {
		p := minTestPort + rand.IntN(maxTestPort-minTestPort+1)
		if issued.ports[p] || !bindable("127.0.0.1", p) {
			continue
		}
		issued.ports[p] = true
		return p
	}
	t.Fatalf("no free loopback port in %d-%d", minTestPort, maxTestPort)
	return 0
}

// FreeAddr returns "127.0.0.1:<free port>".
func FreeAddr(t tb.T) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// FreeLoopbackIP returns an address in 127.0.0.0/8 other than 127.0.0.1 on which
// every given port can be bound right now, and that no other call in this process
// has returned. A test uses it as a pod or node IP, so a config with fixed ports
// (4317, 10250, ...) runs unchanged beside other tests, and the API server accepts
// it as a pod IP (every octet a valid one).
func FreeLoopbackIP(t tb.T, ports ...int) string {
	t.Helper()
	issued.Lock()
	defer issued.Unlock()
	for range 1000 {
		ip := randomLoopbackIP()
		if issued.ips[ip] {
			continue
		}
		ok := true
		for _, p := range ports {
			if !bindable(ip.String(), p) {
				ok = false
				break
			}
		}
		if ok {
			issued.ips[ip] = true
			return ip.String()
		}
	}
	t.Fatalf("no loopback address with ports %v free", ports)
	return ""
}

// randomLoopbackIP draws from 127.10.1.2-127.249.250.251: clear of 127.0.0.0/16,
// where 127.0.0.1 and the system's own loopback names live, and of .0/.255.
func randomLoopbackIP() netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(10 + rand.IntN(240)), byte(1 + rand.IntN(250)), byte(2 + rand.IntN(250))})
}

func bindable(host string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
