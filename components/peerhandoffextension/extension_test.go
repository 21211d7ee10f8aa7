// SPDX-License-Identifier: Apache-2.0

package peerhandoffextension

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configmiddleware"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/extension/memorylimiterextension"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-relay/otelcol-relay/components/admissionextension"
	"github.com/otelcol-relay/otelcol-relay/components/internal/peerhandoff"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

var (
	admissionID = component.MustNewID("admission")
	wireDefault = component.MustNewIDWithName("otlp_http_wire", "default")
)

type host map[component.ID]component.Component

func (h host) GetExtensions() map[component.ID]component.Component { return h }

// relay is one peer_handoff with the real admission extension whose drain
// starts it, as a relay pod runs them.
type relay struct {
	pod       string
	h         *handoff
	admission extension.Extension
	tel       *componenttest.Telemetry
}

// drain makes the relay's admission drain, as SIGTERM does (NotReady).
func (r *relay) drain(t *testing.T) {
	t.Helper()
	if err := r.admission.(extensioncapabilities.PipelineWatcher).NotReady(); err != nil {
		t.Fatal(err)
	}
}

// peerName is the relays' name their certificate carries (peer_names).
const peerName = "otelcol-relay.relays.svc"

// pki is one CA's files: each relay's keypair serves and dials (server and
// client auth), as the relays' certificate does, and names the relays'
// Service.
type pki struct {
	dir string
	ca  *testcerts.CA
}

func newPKI(t *testing.T) *pki {
	return newPKINamed(t, peerName)
}

// newPKINamed is newPKI with a relay certificate that names name instead.
func newPKINamed(t *testing.T, name string) *pki {
	p := &pki{dir: t.TempDir(), ca: testcerts.NewCA(t, "relay-ca")}
	testcerts.WriteFile(t, filepath.Join(p.dir, "ca.crt"), p.ca.CertPEM)
	kp := p.ca.Peer(t, testcerts.Options{CommonName: "relay", DNSNames: []string{name, "localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	testcerts.WriteFile(t, filepath.Join(p.dir, "tls.crt"), kp.CertPEM)
	testcerts.WriteFile(t, filepath.Join(p.dir, "tls.key"), kp.KeyPEM)
	return p
}

// freeEndpoints gives each pod a loopback port of its own.
func freeEndpoints(t *testing.T, pods ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, pod := range pods {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out[pod] = "https://" + l.Addr().String()
		l.Close()
	}
	return out
}

// startRelays starts a relay per pod name, each taking hand-offs on its own
// loopback port and listing the others' as its peers' endpoints.
func startRelays(t *testing.T, p *pki, startAfter time.Duration, pods ...string) map[string]*relay {
	t.Helper()
	endpoints := freeEndpoints(t, pods...)
	out := map[string]*relay{}
	for _, pod := range pods {
		out[pod] = startRelay(t, p, pod, startAfter, endpoints)
	}
	return out
}

// relayOption changes a relay's config, the extensions its host has besides
// admission, or its settings.
type relayOption func(cfg *Config, h host, set *extension.Settings)

// startRelay starts relay pod with its real admission extension, serving on
// endpoints[pod] and handing off to the others of endpoints.
func startRelay(t *testing.T, p *pki, pod string, startAfter time.Duration, endpoints map[string]string, opts ...relayOption) *relay {
	t.Helper()
	r := &relay{pod: pod, tel: componenttest.NewTelemetry()}
	t.Cleanup(func() { _ = r.tel.Shutdown(context.Background()) })
	af := admissionextension.NewFactory()
	var err error
	r.admission, err = af.Create(context.Background(), extension.Settings{ID: admissionID, TelemetrySettings: r.tel.NewTelemetrySettings(), BuildInfo: component.NewDefaultBuildInfo()}, af.CreateDefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := createDefaultConfig()
	cfg.Pod, cfg.MaxOrdinal, cfg.Admission, cfg.StartAfter = pod, 9, admissionID, startAfter
	cfg.Endpoints, cfg.PeerNames = endpoints, []string{peerName}
	cfg.Server.NetAddr.Endpoint = strings.TrimPrefix(endpoints[pod], "https://")
	cfg.Server.TLS = configoptional.Some(configtls.ServerConfig{
		Config:       configtls.Config{CertFile: filepath.Join(p.dir, "tls.crt"), KeyFile: filepath.Join(p.dir, "tls.key")},
		ClientCAFile: filepath.Join(p.dir, "ca.crt"),
	})
	cfg.Client.TLS = configtls.ClientConfig{Config: configtls.Config{
		CAFile: filepath.Join(p.dir, "ca.crt"), CertFile: filepath.Join(p.dir, "tls.crt"), KeyFile: filepath.Join(p.dir, "tls.key"),
	}}
	extensions := host{admissionID: r.admission}
	set := extensiontest.NewNopSettings(component.MustNewType("peer_handoff"))
	set.TelemetrySettings = r.tel.NewTelemetrySettings()
	for _, o := range opts {
		o(cfg, extensions, &set)
	}
	if err = cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r.h, err = newHandoff(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.admission.Start(context.Background(), host{}); err != nil {
		t.Fatal(err)
	}
	if err := r.h.Start(context.Background(), extensions); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.h.Shutdown(context.Background())
		_ = r.admission.Shutdown(context.Background())
	})
	return r
}

// taken records what an exporter's Accept was given.
type taken struct {
	mu    sync.Mutex
	items [][]byte
	err   error // what Accept answers
}

func (k *taken) accept(_ context.Context, item []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return 0, k.err
	}
	k.items = append(k.items, item)
	return 7, nil
}

func (k *taken) got() [][]byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([][]byte(nil), k.items...)
}

// count sums metric name's points whose attributes include attrs.
func count(t *testing.T, tel *componenttest.Telemetry, name string, attrs map[string]string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		ok := true
		for k, v := range attrs {
			if got, _ := dp.Attributes.Value(attribute.Key(k)); got.AsString() != v {
				ok = false
			}
		}
		if ok {
			n += dp.Value
		}
	}
	return n
}

func TestHandsOffToTheFirstPeerThatStores(t *testing.T) {
	relays := startRelays(t, newPKI(t), 0, "relay-0", "relay-1", "relay-2")
	at0, at1 := &taken{}, &taken{}
	relays["relay-0"].h.Register(wireDefault, pipeline.SignalLogs, at0.accept)
	relays["relay-1"].h.Register(wireDefault, pipeline.SignalLogs, at1.accept)
	// relay-0 drains too, as in a scale-in that removes two: it refuses.
	relays["relay-0"].drain(t)
	leaving := relays["relay-2"]
	if leaving.h.Active() {
		t.Fatal("Active before the relay drains")
	}
	leaving.drain(t)
	if !leaving.h.Active() {
		t.Fatal("not Active with start_after 0 once the relay drains")
	}
	item := []byte("\x0d\x01\x00\x00\x00 a queue item")
	if err := leaving.h.Send(context.Background(), wireDefault, pipeline.SignalLogs, item, 7); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got := at1.got(); len(got) != 1 || !bytes.Equal(got[0], item) {
		t.Fatalf("relay-1 took %q, want the item once", got)
	}
	if len(at0.got()) != 0 {
		t.Error("relay-0, draining, took the item")
	}
	// The next goes to relay-1 first: relay-0 is not asked again.
	if err := leaving.h.Send(context.Background(), wireDefault, pipeline.SignalLogs, item, 7); err != nil {
		t.Fatalf("second Send: %v", err)
	}
	for _, c := range []struct {
		r     *relay
		name  string
		attrs map[string]string
		want  int64
	}{
		{leaving, "otelcol_peer_handoff_sent_items", map[string]string{"peer": "relay-1", "exporter": "otlp_http_wire/default"}, 14},
		{leaving, "otelcol_peer_handoff_failed_attempts", map[string]string{"peer": "relay-0"}, 1},
		{relays["relay-0"], "otelcol_peer_handoff_refused_requests", map[string]string{"reason": "draining"}, 1},
		{relays["relay-1"], "otelcol_peer_handoff_taken_items", map[string]string{"exporter": "otlp_http_wire/default"}, 14},
	} {
		if got := count(t, c.r.tel, c.name, c.attrs); got != c.want {
			t.Errorf("%s: %s%v = %d, want %d", c.r.pod, c.name, c.attrs, got, c.want)
		}
	}
}

// A peer past memory_limiter's limits (the extension, which the gateway's
// config puts in front of the server as a middleware) answers 429 without
// reading the item, and the next peer stores it.
func TestAPeerPastItsMemoryLimitRefusesAndTheNextStores(t *testing.T) {
	mlID := component.MustNewID("memory_limiter")
	mf := memorylimiterextension.NewFactory()
	mcfg := mf.CreateDefaultConfig().(*memorylimiterextension.Config)
	// Far below this test's own heap: the limiter refuses from its first check.
	mcfg.CheckInterval, mcfg.MemoryLimitMiB, mcfg.MemorySpikeLimitMiB = 50*time.Millisecond, 2, 1
	ml, err := mf.Create(context.Background(), extension.Settings{ID: mlID, TelemetrySettings: componenttest.NewNopTelemetrySettings(), BuildInfo: component.NewDefaultBuildInfo()}, mcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err = ml.Start(context.Background(), host{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ml.Shutdown(context.Background()) })
	for deadline := time.Now().Add(10 * time.Second); !ml.(interface{ MustRefuse() bool }).MustRefuse(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("memory_limiter at 2 MiB did not refuse within 10s")
		}
	}

	p := newPKI(t)
	endpoints := freeEndpoints(t, "relay-0", "relay-1", "relay-2")
	withLimiter := func(cfg *Config, h host, _ *extension.Settings) {
		cfg.Server.Middlewares = []configmiddleware.Config{{ID: mlID}}
		h[mlID] = ml
	}
	relays := map[string]*relay{
		"relay-0": startRelay(t, p, "relay-0", 0, endpoints, withLimiter),
		"relay-1": startRelay(t, p, "relay-1", 0, endpoints),
		"relay-2": startRelay(t, p, "relay-2", 0, endpoints),
	}
	at0, at1 := &taken{}, &taken{}
	relays["relay-0"].h.Register(wireDefault, pipeline.SignalLogs, at0.accept)
	relays["relay-1"].h.Register(wireDefault, pipeline.SignalLogs, at1.accept)
	leaving := relays["relay-2"]
	leaving.drain(t)
	if err = leaving.h.Send(context.Background(), wireDefault, pipeline.SignalLogs, []byte("item"), 7); err != nil {
		t.Fatalf("Send with relay-1 able to store: %v", err)
	}
	if len(at0.got()) != 0 || len(at1.got()) != 1 {
		t.Errorf("relay-0 (past its memory limit) took %d items, relay-1 %d; want 0 and 1", len(at0.got()), len(at1.got()))
	}
	if got := count(t, leaving.tel, "otelcol_peer_handoff_failed_attempts", map[string]string{"peer": "relay-0"}); got != 1 {
		t.Errorf("failed attempts at relay-0: %d, want 1", got)
	}
	// With no other peer the 429 is in the error that keeps the item.
	relays["relay-1"].drain(t)
	err = leaving.h.Send(context.Background(), wireDefault, pipeline.SignalLogs, []byte("item"), 7)
	if err == nil || !strings.Contains(err.Error(), "relay-0: 429 Too Many Requests") {
		t.Errorf("Send with relay-0 past its memory limit and relay-1 draining: %v, want relay-0's 429 named", err)
	}
}

// A start_after the drain never reaches is a config that never hands off:
// Start says so, naming both durations.
func TestStartWarnsOfAStartAfterPastTheDrainTimeout(t *testing.T) {
	for _, c := range []struct {
		startAfter time.Duration
		warns      bool
	}{{99 * time.Second, false}, {100 * time.Second, true}, {5 * time.Minute, true}} {
		core, logs := observer.New(zap.WarnLevel)
		observe := func(_ *Config, _ host, set *extension.Settings) { set.Logger = zap.New(core) }
		endpoints := freeEndpoints(t, "relay-0", "relay-1")
		startRelay(t, newPKI(t), "relay-1", c.startAfter, endpoints, observe) // admission's default drain::timeout: 100s
		warned := logs.FilterMessageSnippet("not below the admission extension's drain::timeout").All()
		if got := len(warned) == 1; got != c.warns {
			t.Errorf("start_after %s with drain::timeout 100s: warned %v, want %v (%v)", c.startAfter, got, c.warns, logs.All())
			continue
		}
		if c.warns {
			f := warned[0].ContextMap()
			if fmt.Sprint(f["start_after"]) != c.startAfter.String() || fmt.Sprint(f["drain_timeout"]) != "1m40s" {
				t.Errorf("the warning's fields: %v, want start_after %s and drain_timeout 1m40s", f, c.startAfter)
			}
		}
	}
}

func TestEveryPeerRefusingLeavesTheItemWithTheCaller(t *testing.T) {
	relays := startRelays(t, newPKI(t), 0, "relay-0", "relay-1", "relay-2")
	full := &taken{err: errors.New("sending queue is full")}
	relays["relay-0"].h.Register(wireDefault, pipeline.SignalLogs, full.accept)
	bad := &taken{err: fmt.Errorf("%w: the item is 3 bytes", peerhandoff.ErrBadItem)}
	relays["relay-1"].h.Register(wireDefault, pipeline.SignalMetrics, bad.accept) // logs: no such queue
	relays["relay-1"].h.Register(component.MustNewIDWithName("otlp_http_wire", "other"), pipeline.SignalLogs, bad.accept)
	leaving := relays["relay-2"]
	leaving.drain(t)
	err := leaving.h.Send(context.Background(), wireDefault, pipeline.SignalLogs, []byte("item"), 1)
	if err == nil {
		t.Fatal("Send succeeded with no peer able to store")
	}
	for _, want := range []string{"stays in this relay's queue",
		"relay-0: 503 Service Unavailable: sending queue is full",
		"relay-1: 404 Not Found: no exporter otlp_http_wire/default with a logs queue on this relay"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Send's error lacks %q:\n%v", want, err)
		}
	}
	err = leaving.h.Send(context.Background(), wireDefault, pipeline.SignalMetrics, []byte("item"), 1)
	if err == nil || !strings.Contains(err.Error(), "relay-1: 400 Bad Request: not a queue item this exporter reads: the item is 3 bytes") {
		t.Errorf("a bad item: %v", err)
	}
	for _, c := range []struct {
		pod, reason string
		want        int64
	}{{"relay-0", "not_stored", 1}, {"relay-0", "unknown_exporter", 1}, {"relay-1", "unknown_exporter", 1}, {"relay-1", "bad_item", 1}} {
		if got := count(t, relays[c.pod].tel, "otelcol_peer_handoff_refused_requests", map[string]string{"reason": c.reason}); got != c.want {
			t.Errorf("%s refused %s %d times, want %d", c.pod, c.reason, got, c.want)
		}
	}
}

// A client whose certificate another CA signed gets no hand-off in: the
// item carries every backend's data.
func TestPeersRefuseAClientOfAnotherCA(t *testing.T) {
	p := newPKI(t)
	relays := startRelays(t, p, 0, "relay-0", "relay-1")
	at0 := &taken{}
	relays["relay-0"].h.Register(wireDefault, pipeline.SignalLogs, at0.accept)
	// relay-1 again, with the same peers, a keypair of another CA.
	other := startRelay(t, newPKI(t), "relay-1", 0, map[string]string{"relay-0": relays["relay-0"].h.cfg.Endpoints["relay-0"], "relay-1": "https://127.0.0.1:0"})
	other.drain(t)
	err := other.h.Send(context.Background(), wireDefault, pipeline.SignalLogs, []byte("item"), 1)
	if err == nil || !strings.Contains(err.Error(), "relay-0: ") || !strings.Contains(err.Error(), "tls: ") {
		t.Fatalf("Send with a certificate of another CA: %v, want relay-0's TLS refusal", err)
	}
	if len(at0.got()) != 0 {
		t.Error("relay-0 took an item from a client of another CA")
	}
}

// A client of the same CA whose certificate does not name the relays (a
// fluent-bit's, an agent's) hands nothing off: it would put data straight
// into a backend's queue, past the backend's route and processors.
func TestPeersRefuseAClientThatIsNotARelay(t *testing.T) {
	p := newPKI(t)
	relays := startRelays(t, p, 0, "relay-0", "relay-1")
	at0 := &taken{}
	relays["relay-0"].h.Register(wireDefault, pipeline.SignalLogs, at0.accept)
	// The same CA, a keypair for fluent-bit's name.
	fb := &pki{dir: t.TempDir(), ca: p.ca}
	testcerts.WriteFile(t, filepath.Join(fb.dir, "ca.crt"), p.ca.CertPEM)
	kp := p.ca.Peer(t, testcerts.Options{CommonName: "fluent-bit", DNSNames: []string{"fluent-bit.logging.svc"}})
	testcerts.WriteFile(t, filepath.Join(fb.dir, "tls.crt"), kp.CertPEM)
	testcerts.WriteFile(t, filepath.Join(fb.dir, "tls.key"), kp.KeyPEM)
	other := startRelay(t, fb, "relay-1", 0, map[string]string{"relay-0": relays["relay-0"].h.cfg.Endpoints["relay-0"], "relay-1": "https://127.0.0.1:0"})
	other.drain(t)
	err := other.h.Send(context.Background(), wireDefault, pipeline.SignalLogs, []byte("item"), 1)
	if err == nil || !strings.Contains(err.Error(), `relay-0: 403 Forbidden: the client certificate (subject "fluent-bit", DNS names [fluent-bit.logging.svc]) names none of peer_names [otelcol-relay.relays.svc]`) {
		t.Fatalf("Send with fluent-bit's certificate: %v, want relay-0's 403 naming the certificate", err)
	}
	if len(at0.got()) != 0 {
		t.Error("relay-0 took an item from a client that is not a relay")
	}
	if got := count(t, relays["relay-0"].tel, "otelcol_peer_handoff_refused_requests", map[string]string{"reason": "not_a_peer"}); got != 1 {
		t.Errorf("refused not_a_peer %d times, want 1", got)
	}
}

func TestActiveFromStartAfterIntoTheDrain(t *testing.T) {
	relays := startRelays(t, newPKI(t), time.Hour, "relay-0", "relay-1")
	r := relays["relay-1"]
	r.drain(t)
	if r.h.Active() {
		t.Error("Active right after the drain began, with start_after 1h")
	}
	r.h.cfg.StartAfter = 50 * time.Millisecond
	time.Sleep(60 * time.Millisecond)
	if !r.h.Active() {
		t.Error("not Active start_after into the drain")
	}
}

func TestStartNamesAMissingOrWrongAdmission(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Pod, cfg.Admission, cfg.PeerNames = "relay-1", admissionID, []string{peerName}
	h, err := newHandoff(extensiontest.NewNopSettings(component.MustNewType("peer_handoff")), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host host
		want string
	}{
		{host{}, `peer_handoff admission: no extension "admission" in service::extensions`},
		{host{admissionID: h}, `peer_handoff admission: extension "admission" is a admission, which does not drain`},
	} {
		if err := h.Start(context.Background(), c.host); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start: %v, want %q", err, c.want)
		}
	}
}
