// SPDX-License-Identifier: Apache-2.0

package admissionextension

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-relay/otelcol-relay/components/admissionextension/internal/metadatatest"
)

// fakeClock runs AfterFunc callbacks when the test advances it past their time.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, tm)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !tm.stopped
		tm.stopped = true
		return was
	}
}

// Advance moves time by d and runs, in order, the callbacks that fall due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for _, tm := range c.timers {
		if !tm.stopped && !tm.at.After(c.now) {
			tm.stopped = true
			due = append(due, tm.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

type guarded struct {
	a        *admission
	clock    *fakeClock
	logs     *observer.ObservedLogs
	tel      *componenttest.Telemetry
	drainURL string
	intake   *httptest.Server
}

// startGuarded runs the drain endpoint on 127.0.0.1 with a fake clock, its
// logs and metrics observed, and an intake behind the middleware.
func startGuarded(t *testing.T, mutate func(*Config)) *guarded {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.Drain.Endpoint = "127.0.0.1:0"
	cfg.Drain.PollInterval = 20 * time.Millisecond
	cfg.Drain.AllowedSources = []string{"127.0.0.1"}
	if mutate != nil {
		mutate(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	core, logs := observer.New(zap.InfoLevel)
	set := metadatatest.NewSettings(tel)
	set.Logger = zap.New(core)
	a, err := newAdmission(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := &guarded{a: a, clock: &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, logs: logs, tel: tel}
	a.guard.clock = g.clock
	if err := a.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	if err := a.Ready(); err != nil {
		t.Fatal(err)
	}
	g.drainURL = "http://" + a.drainAddr.String()
	g.intake = httptest.NewServer(wrapOK(t, a))
	t.Cleanup(g.intake.Close)
	return g
}

// getFrom is GET url from the local address src (any 127/8 address is this
// host on Linux).
func getFrom(t *testing.T, src, url string) (int, string) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s from %s: %v", url, src, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (g *guarded) intakeCode(t *testing.T) int {
	t.Helper()
	return post(t, g.intake.URL).StatusCode
}

func (g *guarded) readyCode(t *testing.T) int {
	t.Helper()
	code, _ := getFrom(t, "127.0.0.1", g.drainURL+"/ready")
	return code
}

func sumInt(t *testing.T, tel *componenttest.Telemetry, name string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		return d.DataPoints[0].Value
	case metricdata.Gauge[int64]:
		return d.DataPoints[0].Value
	}
	t.Fatalf("%s: unexpected data %T", name, m.Data)
	return 0
}

func TestDrainFromAnotherSourceIsRefused(t *testing.T) {
	g := startGuarded(t, nil)
	code, body := getFrom(t, "127.0.0.2", g.drainURL+"/drain")
	if code != http.StatusForbidden || !strings.Contains(body, "127.0.0.2") {
		t.Fatalf("GET /drain from 127.0.0.2 with only 127.0.0.1 allowed: %d %q; want 403 naming the source", code, body)
	}
	if g.a.draining.Load() || g.intakeCode(t) != http.StatusOK || g.readyCode(t) != http.StatusOK {
		t.Fatalf("after a refused drain: draining %v; want intake and /ready untouched", g.a.draining.Load())
	}
	if n := sumInt(t, g.tel, "otelcol_admission_drain_refused_requests"); n != 1 {
		t.Errorf("otelcol_admission_drain_refused_requests %d, want 1", n)
	}
	lines := g.logs.FilterMessageSnippet("Refused GET /drain").All()
	if len(lines) != 1 || !strings.HasPrefix(lines[0].ContextMap()["source"].(string), "127.0.0.2:") {
		t.Fatalf("refusal log lines %v; want one naming source 127.0.0.2", lines)
	}

	// Rate-limited: within a minute the next refusals are counted, not logged.
	getFrom(t, "127.0.0.2", g.drainURL+"/drain")
	getFrom(t, "127.0.0.3", g.drainURL+"/drain")
	if n := g.logs.FilterMessageSnippet("Refused GET /drain").Len(); n != 1 {
		t.Errorf("%d refusal lines within a minute, want 1", n)
	}
	g.clock.Advance(refusalLogInterval)
	getFrom(t, "127.0.0.4", g.drainURL+"/drain")
	lines = g.logs.FilterMessageSnippet("Refused GET /drain").All()
	if len(lines) != 2 || lines[1].ContextMap()["refused_since_last_line"] != int64(2) {
		t.Errorf("after a minute: refusal lines %v; want a second one saying 2 went unlogged", lines)
	}

	code, body = getFrom(t, "127.0.0.1", g.drainURL+"/drain")
	if code != http.StatusOK {
		t.Fatalf("GET /drain from the allowed 127.0.0.1: %d %q", code, body)
	}
	if g.intakeCode(t) != http.StatusServiceUnavailable {
		t.Error("intake after an allowed drain: want 503")
	}
}

func TestDrainResumesAfterTheBound(t *testing.T) {
	g := startGuarded(t, func(c *Config) { c.Drain.ResumeAfter = 3 * time.Minute })
	if _, ok := g.a.DrainingSince(); ok {
		t.Fatal("DrainingSince before any drain: want false")
	}
	before := time.Now()
	if code, body := getFrom(t, "127.0.0.1", g.drainURL+"/drain"); code != http.StatusOK {
		t.Fatalf("GET /drain: %d %q", code, body)
	}
	// peer_handoff counts its start_after from it.
	if since, ok := g.a.DrainingSince(); !ok || since.Before(before) || since.After(time.Now()) {
		t.Errorf("DrainingSince after GET /drain: %v %v, want a time between the call and now", since, ok)
	}
	g.clock.Advance(3*time.Minute - time.Nanosecond)
	if g.intakeCode(t) != http.StatusServiceUnavailable || g.readyCode(t) != http.StatusServiceUnavailable {
		t.Fatal("before drain::resume_after: want intake and /ready 503")
	}
	g.clock.Advance(time.Nanosecond)
	if code := g.intakeCode(t); code != http.StatusOK {
		t.Errorf("intake after drain::resume_after: %d, want 200", code)
	}
	if code := g.readyCode(t); code != http.StatusOK {
		t.Errorf("/ready after drain::resume_after: %d, want 200", code)
	}
	if v := sumInt(t, g.tel, "otelcol_admission_draining"); v != 0 {
		t.Errorf("otelcol_admission_draining %d after the resume, want 0", v)
	}
	if g.logs.FilterMessageSnippet("accepting export requests again").Len() != 1 {
		t.Error("no log line says the drain resumed")
	}
	if _, ok := g.a.DrainingSince(); ok {
		t.Error("DrainingSince after the resume: want false")
	}
}

func TestDrainAgainRestartsTheBound(t *testing.T) {
	g := startGuarded(t, func(c *Config) { c.Drain.ResumeAfter = 3 * time.Minute })
	getFrom(t, "127.0.0.1", g.drainURL+"/drain")
	g.clock.Advance(2 * time.Minute)
	getFrom(t, "127.0.0.1", g.drainURL+"/drain")
	g.clock.Advance(2 * time.Minute) // 4 min after the first, 2 after the second
	if g.intakeCode(t) != http.StatusServiceUnavailable {
		t.Fatal("the first drain's bound ended the second drain")
	}
	g.clock.Advance(time.Minute)
	if g.intakeCode(t) != http.StatusOK {
		t.Fatal("the second drain did not resume after its own bound")
	}
}

func TestDrainFollowedByShutdownNeverResumes(t *testing.T) {
	g := startGuarded(t, nil)
	getFrom(t, "127.0.0.1", g.drainURL+"/drain")
	if err := g.a.NotReady(); err != nil { // SIGTERM
		t.Fatal(err)
	}
	g.clock.Advance(time.Hour)
	if !g.a.draining.Load() || g.intakeCode(t) != http.StatusServiceUnavailable {
		t.Fatal("a drain followed by the collector's shutdown resumed intake")
	}
}

func TestDrainAllowedSources(t *testing.T) {
	a := newTestAdmissionCfg(t, createDefaultConfig())
	a.cfg.Drain.AllowedSources = []string{"10.0.0.7", "fd00::/64", defaultGatewaySource}
	a.guard.readFile = func(name string) ([]byte, error) {
		switch name {
		case "/proc/net/route":
			return os.ReadFile("testdata/route")
		case "/proc/net/ipv6_route":
			return os.ReadFile("testdata/ipv6_route")
		}
		return nil, os.ErrNotExist
	}
	a.guard.allowed = a.resolveSources()
	for remote, want := range map[string]bool{
		"10.0.0.7:4711":               true,
		"[::ffff:10.0.0.7]:4711":      true, // a dual-stack listener's view of 10.0.0.7
		"10.0.0.8:4711":               false,
		"[fd00::1234]:80":             true,
		"[fd00:0:0:1::1]:80":          false,
		"10.244.3.1:80":               true, // the default gateway (testdata/route)
		"[fe80::1%eth0]:80":           true, // the IPv6 default gateway, with its zone
		"10.244.3.9:80":               false,
		"not an address":              false,
		"[2001:db8::1]:80":            false,
		"127.0.0.1:80":                false, // not listed here
		"[fe80::1234:5678:9abc:1]:80": false,
	} {
		if got := a.drainAllowed(remote); got != want {
			t.Errorf("drain from %s allowed %v, want %v (allowed %v)", remote, got, want, a.guard.allowed)
		}
	}
}

func TestParseRoutes(t *testing.T) {
	v4, _ := os.ReadFile("testdata/route")
	if got := parseRouteV4(v4); len(got) != 1 || got[0] != netip.MustParseAddr("10.244.3.1") {
		t.Errorf("IPv4 default gateways %v, want [10.244.3.1]", got)
	}
	v6, _ := os.ReadFile("testdata/ipv6_route")
	if got := parseRouteV6(v6); len(got) != 1 || got[0] != netip.MustParseAddr("fe80::1") {
		t.Errorf("IPv6 default gateways %v, want [fe80::1]", got)
	}
}
