// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

// The gateway and agent configs from deploy/ enrich logs with Kubernetes metadata,
// with the ServiceAccount tokens the manifests grant.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// TestKubeAttributes runs the gateway and agent configs from deploy/ with the
// ServiceAccount tokens the manifests grant, against the API server, and checks that
// both the fluent-bit path (pod identity in resource or record attributes, at the
// gateway) and the app path (the connection's pod IP, at the agent) get the pod's
// Deployment, UID, node and namespace, also for a pod created after the start.
// The subtests run in order on the same collectors; the last one changes the
// relay's ClusterRole.
func TestKubeAttributes(t *testing.T) {
	c := newCluster(t)
	first := c.addPod(t, "x2x4z", e2e.FreeLoopbackIP(t))
	gw := startAttributesGateway(t, c)
	ag := startAttributesAgent(t, c)
	check := func(t *testing.T, name string, sink *otlpfixture.Sink, p pod, send func(mark string) error) {
		t.Helper()
		expectEnriched(t, name, sink, c.identity(p), send, gw.col, ag.col)
	}

	t.Run("fluent-bit identity in resource attributes", func(t *testing.T) {
		check(t, "fluent-bit-resource", gw.sink, first, func(m string) error { return gw.sendFluentBit(c, first, m, true) })
	})
	t.Run("fluent-bit identity in record attributes", func(t *testing.T) {
		check(t, "fluent-bit-record", gw.sink, first, func(m string) error { return gw.sendFluentBit(c, first, m, false) })
	})
	t.Run("app identified by its connection", func(t *testing.T) {
		check(t, "app-connection", ag.sink, first, func(m string) error { return ag.sendApp(first, m) })
	})

	late := c.addPod(t, "k7q2m", e2e.FreeLoopbackIP(t))
	t.Run("pod created after the start", func(t *testing.T) {
		check(t, "late-fluent-bit", gw.sink, late, func(m string) error { return gw.sendFluentBit(c, late, m, true) })
		check(t, "late-app", ag.sink, late, func(m string) error { return ag.sendApp(late, m) })
	})

	// A pod that claims another pod's identity (uid, name and a namespace of its
	// choice) ends up with its own: identity comes from the connection, and every
	// claim that disagreed is counted.
	t.Run("app claiming another pod's identity gets its own", func(t *testing.T) {
		check(t, "app-claims-another-pod", ag.sink, first, func(m string) error {
			return ag.sendApp(first, m, "k8s.pod.uid", late.uid, "k8s.pod.name", late.name, "k8s.namespace.name", "kube-system")
		})
		for _, attr := range []string{"k8s.pod.uid", "k8s.pod.name", "k8s.namespace.name"} {
			addr := fmt.Sprintf("127.0.0.1:%d", ag.metricsPort)
			if !otlpfixture.WaitFor(30*time.Second, func() bool {
				m, err := e2e.ScrapeSelfMetrics(addr)
				if err != nil {
					return false
				}
				n, _ := m.Sum("otelcol_processor_pod_identity_claims_overwritten", map[string]string{"attribute": attr, "outcome": "replaced"})
				return n >= 1
			}) {
				page := scrape(t, "http://"+addr+"/metrics")
				t.Errorf("agent metrics count no overwritten claim of %s:\n%s", attr, grepLines(page, "pod_identity"))
			}
		}
	})

	// The gateway never associates by connection: a record naming no pod, sent from
	// a pod's IP, stays unenriched.
	t.Run("gateway does not associate by connection", func(t *testing.T) {
		if err := sendAnonymousFrom(t, gw.fluentBit, "anonymous"); err != nil {
			t.Fatal(err)
		}
		if !otlpfixture.WaitFor(30*time.Second, func() bool { return resourceOf(gw.sink, "anonymous") != nil }) {
			t.Fatal("anonymous record never reached the sink")
		}
		if res := resourceOf(gw.sink, "anonymous"); res["k8s.pod.uid"] != "" {
			t.Errorf("gateway enriched a record that names no pod: %v", res)
		}
	})

	// The narrowed ClusterRoles (pods: list, watch) are all the started informers
	// need: an informer refused anything would say "forbidden" in the log.
	t.Run("the manifests' roles are all the informers need", func(t *testing.T) {
		for name, col := range map[string]*e2e.Collector{"gateway": gw.col, "agent": ag.col} {
			if lines := grepLines(col.Output(), "forbidden"); lines != "" {
				t.Errorf("%s was refused by the API server with the manifests' role:\n%s", name, lines)
			}
		}
	})

	// And such a refusal does show: without the pods rule, the gateway's informer
	// logs its denied list.
	t.Run("a gateway without the pods rule logs its refusal", func(t *testing.T) {
		c.k.MustKubectl(t, "patch", "clusterrole", "otelcol-relay", "--type=json", `-p=[{"op": "remove", "path": "/rules/0"}]`)
		env := append(append([]string(nil), gw.env...), gatewayInstanceEnv(t, e2e.FreePort(t))...)
		denied := e2e.Start(t, "", e2e.Options{Env: env, ReadyTimeout: 2 * time.Minute, Args: gw.args})
		if err := denied.WaitForOutput(`pods is forbidden`, 90*time.Second); err != nil {
			t.Errorf("no denied pods list in the log of a gateway without the pods rule: %v\n%s", err, tail(denied.Output()))
		} else {
			t.Logf("without the pods rule: %s", grepLines(denied.Output(), "forbidden"))
		}
	})
}

// attributesGateway is deploy/base/gateway.yaml with the relay ServiceAccount's
// token, exporting to a TLS sink; fluentBit sends to it with a client certificate
// the gateway's bundle verifies, as deploy/fluent-bit does.
type attributesGateway struct {
	col       *e2e.Collector
	sink      *otlpfixture.Sink
	fluentBit *e2e.HTTPClient
	env, args []string // to start another gateway like it
	// grpcAddr is the agents' receiver (otlp, OTLP/gRPC with mutual TLS).
	grpcAddr string
}

func startAttributesGateway(t *testing.T, c *cluster) *attributesGateway {
	t.Helper()
	env := c.k.InCluster(t, c.k.ServiceAccountToken(t, "otelcol-relay", "otelcol-relay"))
	gw := &attributesGateway{sink: c.tlsSink(t)}
	caFile, certFile, keyFile := c.tlsFiles(t, "gateway-backend")
	srvCA, srvCert, srvKey := c.tlsFiles(t, "gateway-receiver")
	gwHTTP := e2e.FreePort(t)
	tokenFile := filepath.Join(t.TempDir(), "federation-token")
	if err := os.WriteFile(tokenFile, []byte("unused"), 0o600); err != nil {
		t.Fatal(err)
	}
	gwGRPC := e2e.FreePort(t)
	gw.grpcAddr = fmt.Sprintf("127.0.0.1:%d", gwGRPC)
	gw.env = append(append(env, "MY_POD_IP=127.0.0.1"), gatewayInstanceEnv(t, gwHTTP)...)
	gw.env = append(gw.env,
		fmt.Sprintf("RELAY_OTLP_GRPC_PORT=%d", gwGRPC), // later entries win
		"RELAY_FEDERATION_TARGET="+e2e.FreeAddr(t),
		"RELAY_FEDERATION_TOKEN_FILE="+tokenFile,
		"RELAY_FEDERATION_CA_FILE="+caFile,
		"RELAY_OTLP_TLS_CERT_FILE="+srvCert,
		"RELAY_OTLP_TLS_KEY_FILE="+srvKey,
		"RELAY_OTLP_CLIENT_CA_FILE="+srvCA,
		"OTEL_EXPORTER_DEFAULT_ENDPOINT=https://"+gw.sink.HTTPAddr,
		"OTEL_EXPORTER_DEFAULT_AUTHORIZATION=Bearer e2e",
		"OTEL_EXPORTER_DEFAULT_CA_FILE="+caFile,
		"OTEL_EXPORTER_DEFAULT_CERT_FILE="+certFile,
		"OTEL_EXPORTER_DEFAULT_KEY_FILE="+keyFile,
	)
	gw.args = []string{"--config", manifest.Dir("base", "gateway.yaml")}
	gw.col = e2e.Start(t, "", e2e.Options{Env: gw.env, ReadyTimeout: 2 * time.Minute, Args: gw.args})

	fbCA, fbCert, fbKey := c.tlsFiles(t, "fluent-bit")
	fbPair, err := tls.LoadX509KeyPair(fbCert, fbKey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	caPEM, _ := os.ReadFile(fbCA)
	roots.AppendCertsFromPEM(caPEM)
	gw.fluentBit = e2e.NewHTTPClient(fmt.Sprintf("https://127.0.0.1:%d", gwHTTP), &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{fbPair}, ServerName: "localhost"})
	return gw
}

// gatewayInstanceEnv is what each gateway process needs of its own: free ports
// (OTLP/HTTP on httpPort) and a queue directory.
func gatewayInstanceEnv(t *testing.T, httpPort int) []string {
	t.Helper()
	return []string{
		fmt.Sprintf("RELAY_OTLP_HTTP_PORT=%d", httpPort),
		fmt.Sprintf("RELAY_OTLP_GRPC_PORT=%d", e2e.FreePort(t)),
		fmt.Sprintf("RELAY_HEALTH_PORT=%d", e2e.FreePort(t)),
		fmt.Sprintf("RELAY_PPROF_PORT=%d", e2e.FreePort(t)),
		fmt.Sprintf("RELAY_METRICS_PORT=%d", e2e.FreePort(t)),
		fmt.Sprintf("RELAY_DRAIN_PORT=%d", e2e.FreePort(t)),
		"RELAY_QUEUE_DIR=" + filepath.Join(t.TempDir(), "queue"),
	}
}

// sendFluentBit sends a record naming pod p the way deploy/fluent-bit does (in
// the record attributes), or in the resource attributes if onResource.
func (gw *attributesGateway) sendFluentBit(c *cluster, p pod, mark string, onResource bool) error {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr("GET /checkout 200")
	lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	lr.Attributes().PutStr("e2e.mark", mark)
	attrs := lr.Attributes() // what deploy/fluent-bit sends: record attributes
	if onResource {
		attrs = rl.Resource().Attributes()
	}
	attrs.PutStr("k8s.pod.name", p.name)
	attrs.PutStr("k8s.namespace.name", c.ns)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return gw.fluentBit.SendLogs(ctx, ld, otlpfixture.Encoding{})
}

// attributesAgent is deploy/agent/agent.yaml with the aks overlay's environment
// and the agent ServiceAccount's token, exporting to a TLS sink in place of the
// gateway.
type attributesAgent struct {
	col                             *e2e.Collector
	sink                            *otlpfixture.Sink // nil when it exports to a gateway
	grpcPort, httpPort, metricsPort int
}

func startAttributesAgent(t *testing.T, c *cluster) *attributesAgent {
	t.Helper()
	sink := c.tlsSink(t)
	ag := startAttributesAgentTo(t, c, sink.GRPCAddr)
	ag.sink = sink
	return ag
}

// startAttributesAgentTo starts the agent exporting to gateway (host:port),
// whose serving certificate must come from the cluster's CA.
func startAttributesAgentTo(t *testing.T, c *cluster, gateway string) *attributesAgent {
	t.Helper()
	agentToken := c.k.ServiceAccountToken(t, "otelcol-relay", "otelcol-relay-agent")
	agentEnvBase := c.k.InCluster(t, agentToken)
	ag := &attributesAgent{}
	aCA, aCert, aKey := c.tlsFiles(t, "agent-gateway")
	ag.grpcPort, ag.httpPort, ag.metricsPort = e2e.FreePort(t), e2e.FreePort(t), e2e.FreePort(t)
	aEnv := append(slices.Clone(agentEnvBase), agentEnv(t, manifest.Dir("overlays", "aks"), map[string]string{
		"MY_POD_IP":               "127.0.0.1",
		"RELAY_OTLP_GRPC_PORT":    strconv.Itoa(ag.grpcPort),
		"RELAY_OTLP_HTTP_PORT":    strconv.Itoa(ag.httpPort),
		"RELAY_HEALTH_PORT":       strconv.Itoa(e2e.FreePort(t)),
		"RELAY_METRICS_PORT":      strconv.Itoa(ag.metricsPort),
		"K8S_NODE_NAME":           c.node,
		"K8S_NODE_IP":             e2e.FreeLoopbackIP(t), // no kubelet here: scrapes fail, logs still flow
		"OTELCOL_RELAY_GATEWAY":   gateway,
		"RELAY_GATEWAY_CA_FILE":   aCA,
		"RELAY_GATEWAY_CERT_FILE": aCert,
		"RELAY_GATEWAY_KEY_FILE":  aKey,
	})...)
	ag.col = e2e.Start(t, "", e2e.Options{Env: aEnv, ReadyTimeout: 2 * time.Minute, Args: []string{"--config", manifest.Dir("agent", "agent.yaml")}})
	return ag
}

// sendApp is an application's OTLP exporter, connecting from pod p's IP through
// the agent Service (internalTrafficPolicy: Local); claims are resource attribute
// key/value pairs it sets itself.
func (ag *attributesAgent) sendApp(p pod, mark string, claims ...string) error {
	cc, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", ag.grpcPort),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(p.ip)}}
			return d.DialContext(ctx, "tcp", addr)
		}))
	if err != nil {
		return err
	}
	defer cc.Close()
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "checkout")
	for i := 0; i+1 < len(claims); i += 2 {
		rl.Resource().Attributes().PutStr(claims[i], claims[i+1])
	}
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr("order placed")
	lr.Attributes().PutStr("e2e.mark", mark)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return otlpfixture.SendLogsGRPC(ctx, cc, ld)
}

// expectEnriched resends until a record comes out enriched (informers sync after
// the start), then requires every field of want. The collectors' logs go with a
// failure.
func expectEnriched(t *testing.T, name string, sink *otlpfixture.Sink, want map[string]string, send func(mark string) error, gateway, agent *e2e.Collector) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last map[string]string
	for i := 0; time.Now().Before(deadline); i++ {
		mark := fmt.Sprintf("%s-%d", name, i)
		if err := send(mark); err != nil {
			t.Logf("%s: send: %v", name, err)
		}
		otlpfixture.WaitFor(5*time.Second, func() bool {
			last = resourceOf(sink, mark)
			return last != nil && last["k8s.pod.uid"] != ""
		})
		if last != nil && last["k8s.pod.uid"] != "" {
			t.Logf("%s: after %d sends the sink has resource %v", name, i+1, last)
			for k, v := range want {
				if last[k] != v {
					t.Errorf("%s: resource %s = %q, want %q (resource %v)", name, k, last[k], v, last)
				}
			}
			return
		}
	}
	t.Errorf("%s: no enriched record within 90s; last resource seen: %v\ngateway:\n%s\nagent:\n%s", name, last, tail(gateway.Output()), tail(agent.Output()))
}

func sendAnonymousFrom(t *testing.T, c *e2e.HTTPClient, mark string) error {
	t.Helper()
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr("no pod identity")
	lr.Attributes().PutStr("e2e.mark", mark)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.SendLogs(ctx, ld, otlpfixture.Encoding{})
}

// resourceOf returns the resource attributes of the record marked mark, or nil.
func resourceOf(s *otlpfixture.Sink, mark string) map[string]string {
	for _, ld := range s.Logs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			for j := 0; j < rl.ScopeLogs().Len(); j++ {
				lrs := rl.ScopeLogs().At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					if v, ok := lrs.At(k).Attributes().Get("e2e.mark"); ok && v.Str() == mark {
						out := map[string]string{}
						rl.Resource().Attributes().Range(func(k string, v pcommon.Value) bool {
							out[k] = v.AsString()
							return true
						})
						return out
					}
				}
			}
		}
	}
	return nil
}
