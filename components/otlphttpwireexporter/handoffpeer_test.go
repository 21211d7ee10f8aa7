// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-relay/otelcol-relay/components/admissionextension"
	"github.com/otelcol-relay/otelcol-relay/components/peerhandoffextension"
	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension/queuestoragetest"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

type extensions map[component.ID]component.Component

func (e extensions) GetExtensions() map[component.ID]component.Component { return e }

var (
	admissionID = component.MustNewID("admission")
	peersID     = component.MustNewID("peer_handoff")
)

// handoffRelay is what a relay pod runs of the hand-off: queue_storage on its
// own directory, admission, peer_handoff, and otlp_http_wire/default with a
// persistent queue to its own backend.
type handoffRelay struct {
	host        extensions
	stopStorage func()
	admission   extension.Extension
	peers       extension.Extension
	peersTel    *componenttest.Telemetry
	exp         exporter.Logs
	expTel      *componenttest.Telemetry
	backend     *backend
	dir         string
	pod         string
	tlsDir      string
	endpoints   map[string]string
	stopped     bool
}

func startHandoffRelay(t *testing.T, pod, dir, tlsDir string, endpoints map[string]string, b *backend) *handoffRelay {
	t.Helper()
	r := &handoffRelay{pod: pod, dir: dir, tlsDir: tlsDir, endpoints: endpoints, backend: b}
	storageHost, stop := queuestoragetest.Start(t, dir)
	r.stopStorage = stop
	r.host = extensions{storageID: storageHost.GetExtensions()[storageID]}

	af := admissionextension.NewFactory()
	var err error
	r.admission, err = af.Create(context.Background(), extension.Settings{ID: admissionID, TelemetrySettings: componenttest.NewNopTelemetrySettings(), BuildInfo: component.NewDefaultBuildInfo()}, af.CreateDefaultConfig())
	require.NoError(t, err)
	require.NoError(t, r.admission.Start(context.Background(), r.host))
	r.host[admissionID] = r.admission

	pf := peerhandoffextension.NewFactory()
	pcfg := pf.CreateDefaultConfig().(*peerhandoffextension.Config)
	pcfg.Pod, pcfg.MaxOrdinal, pcfg.Admission, pcfg.StartAfter, pcfg.Endpoints = pod, 9, admissionID, 0, endpoints
	pcfg.PeerNames = []string{"otelcol-relay.relays.svc"}
	pcfg.Server.NetAddr.Endpoint = strings.TrimPrefix(endpoints[pod], "https://")
	pcfg.Server.TLS = configoptional.Some(configtls.ServerConfig{
		Config:       configtls.Config{CertFile: filepath.Join(tlsDir, "tls.crt"), KeyFile: filepath.Join(tlsDir, "tls.key")},
		ClientCAFile: filepath.Join(tlsDir, "ca.crt"),
	})
	pcfg.Client.TLS = configtls.ClientConfig{Config: configtls.Config{
		CAFile: filepath.Join(tlsDir, "ca.crt"), CertFile: filepath.Join(tlsDir, "tls.crt"), KeyFile: filepath.Join(tlsDir, "tls.key"),
	}}
	require.NoError(t, pcfg.Validate())
	r.peersTel = componenttest.NewTelemetry()
	r.peers, err = pf.Create(context.Background(), extension.Settings{ID: peersID, TelemetrySettings: r.peersTel.NewTelemetrySettings(), BuildInfo: component.NewDefaultBuildInfo()}, pcfg)
	require.NoError(t, err)
	require.NoError(t, r.peers.Start(context.Background(), r.host))
	r.host[peersID] = r.peers
	r.startExporter(t)
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *handoffRelay) startExporter(t *testing.T) {
	cfg := wireConfig(r.backend)
	cfg.QueueConfig = persistentQueue()
	r.expTel = componenttest.NewTelemetry()
	set := exportertest.NewNopSettings(NewFactory().Type())
	set.ID = component.MustNewIDWithName("otlp_http_wire", "default")
	set.TelemetrySettings = r.expTel.NewTelemetrySettings()
	var err error
	r.exp, err = NewFactory().CreateLogs(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, r.exp.Start(context.Background(), r.host))
}

// stop shuts the relay down in the collector's order: exporters, then
// extensions.
func (r *handoffRelay) stop(t *testing.T) {
	if r.stopped {
		return
	}
	r.stopped = true
	require.NoError(t, r.exp.Shutdown(context.Background()))
	require.NoError(t, r.peers.Shutdown(context.Background()))
	require.NoError(t, r.admission.Shutdown(context.Background()))
	r.stopStorage()
}

// queueSize is the exporter's otelcol_exporter_queue_size, -1 before it
// reports one.
func (r *handoffRelay) queueSize(t *testing.T) int64 {
	m, err := r.expTel.GetMetric("otelcol_exporter_queue_size")
	if err != nil {
		return -1
	}
	g, ok := m.Data.(metricdata.Gauge[int64])
	require.True(t, ok, "otelcol_exporter_queue_size is a %T", m.Data)
	var n int64
	for _, dp := range g.DataPoints {
		n += dp.Value
	}
	return n
}

func loopbackEndpoints(t *testing.T, pods ...string) map[string]string {
	out := map[string]string{}
	for _, pod := range pods {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		out[pod] = "https://" + l.Addr().String()
		require.NoError(t, l.Close())
	}
	return out
}

// A relay whose backend is down drains: its exporter hands every request of
// its persistent queue to its peer, which stores them in its own queue with
// their request context (a tenant's client metadata), and delivers each record
// once when its backend returns. The leaving relay's volume is empty: a relay
// started on it again sends nothing.
func TestDrainingExporterHandsItsQueueToAPeer(t *testing.T) {
	tlsDir := t.TempDir()
	ca := testcerts.NewCA(t, "relay-ca")
	kp := ca.Peer(t, testcerts.Options{CommonName: "otelcol-relay", DNSNames: []string{"otelcol-relay.relays.svc"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	testcerts.WriteFile(t, filepath.Join(tlsDir, "ca.crt"), ca.CertPEM)
	testcerts.WriteFile(t, filepath.Join(tlsDir, "tls.crt"), kp.CertPEM)
	testcerts.WriteFile(t, filepath.Join(tlsDir, "tls.key"), kp.KeyPEM)
	endpoints := loopbackEndpoints(t, "relay-0", "relay-1")
	down := func(int) (int, http.Header, []byte) { return http.StatusServiceUnavailable, nil, nil }

	peerBackend, leavingBackend := newBackend(t), newBackend(t)
	peerBackend.setRespond(down)
	leavingBackend.setRespond(down)
	peerDir, leavingDir := t.TempDir(), t.TempDir()
	peer := startHandoffRelay(t, "relay-0", peerDir, tlsDir, endpoints, peerBackend)
	leaving := startHandoffRelay(t, "relay-1", leavingDir, tlsDir, endpoints, leavingBackend)

	ctx := client.NewContext(context.Background(), client.Info{Metadata: client.NewMetadata(map[string][]string{"tenant": {"team-a"}})})
	for i := range durRequests {
		require.NoError(t, leaving.exp.ConsumeLogs(ctx, makeLogs(i*durRecords, durRecords)))
	}
	require.Eventually(t, func() bool {
		leavingBackend.mu.Lock()
		defer leavingBackend.mu.Unlock()
		return leavingBackend.reqs >= 2
	}, 30*time.Second, 10*time.Millisecond,
		"the leaving relay's consumers never reached its backend")

	// The drain (SIGTERM's NotReady, or preStop's GET /drain), start_after 0.
	require.NoError(t, leaving.admission.(extensioncapabilities.PipelineWatcher).NotReady())
	require.Eventually(t, func() bool { return leaving.queueSize(t) == 0 }, 30*time.Second, 10*time.Millisecond,
		"the leaving relay's queue never emptied into its peer")
	assert.Equal(t, int64(durRequests*durRecords), sumOf(t, peer.peersTel, "otelcol_peer_handoff_taken_items"), "records the peer took")
	assert.Equal(t, int64(durRequests*durRecords), sumOf(t, leaving.peersTel, "otelcol_peer_handoff_sent_items"), "records the leaving relay handed off")
	assert.Empty(t, leavingBackend.delivered(), "the leaving relay's backend, down, got records")
	leaving.stop(t)

	// The peer's queue holds them, each with the tenant it was sent with.
	peer.stop(t)
	host, stop := queuestoragetest.Start(t, peerDir)
	cl, err := host.GetExtensions()[storageID].(storage.Extension).GetClient(context.Background(), component.KindExporter, component.MustNewIDWithName("otlp_http_wire", "default"), "logs")
	require.NoError(t, err)
	item, err := cl.Get(context.Background(), "0")
	require.NoError(t, err)
	require.NotNil(t, item, "the peer's queue has no item 0")
	itemCtx, req, err := queueEncoding{sig: logsSignal}.Unmarshal(item)
	require.NoError(t, err)
	assert.Equal(t, []string{"team-a"}, client.FromContext(itemCtx).Metadata.Get("tenant"), "the handed-off item's client metadata")
	assert.Positive(t, req.ItemsCount())
	require.NoError(t, cl.Close(context.Background()))
	stop()

	// The peer, restarted with its backend up, delivers every record once.
	peerBackend.setRespond(nil)
	startHandoffRelay(t, "relay-0", peerDir, tlsDir, endpoints, peerBackend)
	got := peerBackend.waitRecords(t, durRequests*durRecords)
	seen := map[int64]int{}
	for _, s := range got {
		seen[s]++
	}
	for i := range int64(durRequests * durRecords) {
		assert.Equal(t, 1, seen[i], "record %d at the peer's backend", i)
	}

	// A relay started again on the leaving relay's volume has nothing to send.
	leavingBackend.setRespond(nil)
	again := startHandoffRelay(t, "relay-1", leavingDir, tlsDir, endpoints, leavingBackend)
	assert.Zero(t, again.queueSize(t), "items left on the leaving relay's volume")
	assert.Empty(t, leavingBackend.delivered())
}
