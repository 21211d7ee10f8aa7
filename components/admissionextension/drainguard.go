// SPDX-License-Identifier: Apache-2.0

package admissionextension

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// GET /drain turns intake off, so it is accepted only from drain::allowed_sources:
// in a pod, the node, which is where the kubelet runs the preStop hook from. A
// drain that no shutdown follows (nobody meant it) ends by itself after
// drain::resume_after.

// refusalLogInterval bounds the log lines about refused drains: whoever keeps
// calling /drain must not flood the log.
const refusalLogInterval = time.Minute

// clock is time, injectable: the resume bound is minutes long and the tests move
// time instead of waiting for it.
type clock interface {
	Now() time.Time
	// AfterFunc runs f after d, in its own goroutine, unless stop is called first.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// drainGuard is the state of who may drain and of when a drain ends by itself.
type drainGuard struct {
	clock clock
	// readFile reads the routing tables for default_gateway (os.ReadFile).
	readFile func(string) ([]byte, error)
	allowed  []netip.Prefix

	mu sync.Mutex // orders draining's transitions and the fields below
	// stopping is set once the collector shuts down: its drain never resumes.
	stopping   bool
	gen        uint64 // which drain the pending resume belongs to
	stopResume func() bool
	// lastLog and unlogged rate-limit the refusal log lines.
	lastLog  time.Time
	unlogged int
}

// parseSource reads one allowed_sources entry: an IP (one address) or a CIDR
// prefix; default_gateway is resolved at start and parses to no prefix.
func parseSource(s string) (netip.Prefix, error) {
	if s == defaultGatewaySource {
		return netip.Prefix{}, nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// resolveSources turns allowed_sources into prefixes, looking up this pod's
// default gateways for default_gateway. A routing table that cannot be read
// leaves the other entries: the drain then fails closed from the gateway.
func (a *admission) resolveSources() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range a.cfg.Drain.AllowedSources {
		if s != defaultGatewaySource {
			p, _ := parseSource(s) // Validate checked it
			out = append(out, p)
			continue
		}
		gws, err := defaultGateways(a.guard.readFile)
		if err != nil || len(gws) == 0 {
			a.logger.Warn("drain::allowed_sources: no default gateway found; GET /drain is accepted only from the other entries",
				zap.Strings("allowed_sources", a.cfg.Drain.AllowedSources), zap.Error(err))
		}
		for _, g := range gws {
			out = append(out, netip.PrefixFrom(g, g.BitLen()))
		}
	}
	return out
}

// defaultGateways reads the next hops of this network namespace's default
// routes from /proc/net/route and /proc/net/ipv6_route.
func defaultGateways(readFile func(string) ([]byte, error)) ([]netip.Addr, error) {
	var gws []netip.Addr
	var errs []error
	if b, err := readFile("/proc/net/route"); err == nil {
		gws = append(gws, parseRouteV4(b)...)
	} else {
		errs = append(errs, err)
	}
	if b, err := readFile("/proc/net/ipv6_route"); err == nil {
		gws = append(gws, parseRouteV6(b)...)
	} else {
		errs = append(errs, err)
	}
	if len(gws) > 0 {
		return gws, nil
	}
	return nil, errors.Join(errs...)
}

const rtfGateway = 0x2 // RTF_GATEWAY: the route has a next hop

// parseRouteV4 reads /proc/net/route: Iface Destination Gateway Flags ... Mask,
// addresses as the kernel's network-order words printed in host byte order.
func parseRouteV4(b []byte) []netip.Addr {
	var out []netip.Addr
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		gw, err1 := strconv.ParseUint(f[2], 16, 32)
		flags, err2 := strconv.ParseUint(f[3], 16, 32)
		if err1 != nil || err2 != nil || flags&rtfGateway == 0 || gw == 0 {
			continue
		}
		var ip [4]byte
		binary.NativeEndian.PutUint32(ip[:], uint32(gw))
		out = append(out, netip.AddrFrom4(ip))
	}
	return out
}

// parseRouteV6 reads /proc/net/ipv6_route: destination, its prefix length,
// source, its prefix length, next hop, metric, refcnt, use, flags, device;
// addresses as 32 hex digits in network order.
func parseRouteV6(b []byte) []netip.Addr {
	var out []netip.Addr
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[0] != strings.Repeat("0", 32) || f[1] != "00" {
			continue
		}
		flags, err := strconv.ParseUint(f[8], 16, 32)
		hop, err2 := hex.DecodeString(f[4])
		if err != nil || err2 != nil || len(hop) != 16 || flags&rtfGateway == 0 {
			continue
		}
		if a := netip.AddrFrom16([16]byte(hop)); !a.IsUnspecified() {
			out = append(out, a)
		}
	}
	return out
}

// drainAllowed reports whether a request from remoteAddr (host:port) may drain.
func (a *admission) drainAllowed(remoteAddr string) bool {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return false
	}
	src := ap.Addr().Unmap().WithZone("")
	for _, p := range a.guard.allowed {
		if p.Contains(src) {
			return true
		}
	}
	return false
}

// refuseDrain answers a GET /drain from a source that may not drain. The log
// names the source, once per refusalLogInterval with how many went unlogged.
func (a *admission) refuseDrain(ctx context.Context, remoteAddr string) string {
	a.tel.AdmissionDrainRefusedRequests.Add(ctx, 1, a.attrs)
	g := &a.guard
	g.mu.Lock()
	now := g.clock.Now()
	logIt := g.lastLog.IsZero() || now.Sub(g.lastLog) >= refusalLogInterval
	unlogged := g.unlogged
	if logIt {
		g.lastLog, g.unlogged = now, 0
	} else {
		g.unlogged++
	}
	g.mu.Unlock()
	if logIt {
		a.logger.Warn("Refused GET /drain from a source not in drain::allowed_sources; intake stays on",
			zap.String("source", remoteAddr),
			zap.Strings("allowed_sources", a.cfg.Drain.AllowedSources),
			zap.Int("refused_since_last_line", unlogged))
	}
	return fmt.Sprintf("otelcol-relay: GET /drain is accepted only from drain::allowed_sources (the node); %s is not one", remoteAddr)
}

// armResume (re)starts the bound after which this drain ends by itself.
func (a *admission) armResume() {
	g := &a.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopResume != nil {
		g.stopResume()
	}
	g.gen++
	gen := g.gen
	g.stopResume = g.clock.AfterFunc(a.cfg.Drain.ResumeAfter, func() { a.resume(gen) })
}

// resume ends drain gen if it is still the latest and the collector is not
// shutting down: no SIGTERM followed it, so the pod stays and takes data again.
func (a *admission) resume(gen uint64) {
	g := &a.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	if gen != g.gen || g.stopping || !a.draining.Load() {
		return
	}
	a.draining.Store(false)
	a.tel.AdmissionDraining.Record(context.Background(), 0, a.attrs)
	a.logger.Warn("No shutdown followed GET /drain within drain::resume_after: accepting export requests again",
		zap.Duration("resume_after", a.cfg.Drain.ResumeAfter))
}

// stopResumeTimer is part of Shutdown: no resume goroutine outlives the extension.
func (a *admission) stopResumeTimer() {
	g := &a.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopping = true
	if g.stopResume != nil {
		g.stopResume()
	}
}
