// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"net/netip"
	"testing"
)

// The draw once produced 127.258.176.177, which the API server refuses as a pod IP.
func TestRandomLoopbackIPIsAValidPodIP(t *testing.T) {
	for range 200_000 {
		ip := randomLoopbackIP()
		b := ip.As4()
		if b[0] != 127 || b[1] < 10 || b[2] == 0 || b[3] == 0 || b[3] == 255 {
			t.Fatalf("drew %s", ip)
		}
		if _, err := netip.ParseAddr(ip.String()); err != nil {
			t.Fatalf("drew %s: %v", ip, err)
		}
	}
}

func TestFreeAddressesAreNeverHandedOutTwice(t *testing.T) {
	ports := map[int]bool{}
	for range 2000 {
		p := FreePort(t)
		if ports[p] || p < minTestPort || p > maxTestPort {
			t.Fatalf("port %d: repeated or outside %d-%d", p, minTestPort, maxTestPort)
		}
		ports[p] = true
	}
	ips := map[string]bool{}
	for range 2000 {
		ip := FreeLoopbackIP(t)
		if ips[ip] {
			t.Fatalf("address %s handed out twice", ip)
		}
		ips[ip] = true
	}
}
