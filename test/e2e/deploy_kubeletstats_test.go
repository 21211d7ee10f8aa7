// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

// The agent's kubelet_stats receiver against a kubelet that authorizes it the
// way a real one does.

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// fakeKubelet serves /stats/summary over HTTPS with a certificate nobody trusts
// (as AKS kubelets do) and authorizes each request the way the kubelet does:
// TokenReview of the bearer token, then a SubjectAccessReview for get nodes/stats.
type fakeKubelet struct {
	mu         sync.Mutex
	authorized int
	denied     []string
}

func startFakeKubelet(t *testing.T, c *cluster, ip string, p pod) *fakeKubelet {
	t.Helper()
	// A certificate from a CA of its own that nobody trusts: what an AKS
	// kubelet's self-signed certificate amounts to for a verifying client.
	kp := testcerts.NewCA(t, c.node).Server(t, testcerts.Options{CommonName: c.node, IPs: []net.IP{net.ParseIP(ip)}})
	fk := &fakeKubelet{}
	now := metav1.NewTime(time.Now())
	u := func(v uint64) *uint64 { return &v }
	summary := statsv1alpha1.Summary{
		Node: statsv1alpha1.NodeStats{
			NodeName:  c.node,
			StartTime: metav1.NewTime(time.Now().Add(-time.Hour)),
			CPU:       &statsv1alpha1.CPUStats{Time: now, UsageNanoCores: u(250_000_000), UsageCoreNanoSeconds: u(9_000_000_000_000)},
			Memory:    &statsv1alpha1.MemoryStats{Time: now, UsageBytes: u(2 << 30), WorkingSetBytes: u(1 << 30), AvailableBytes: u(6 << 30), RSSBytes: u(900 << 20)},
		},
		Pods: []statsv1alpha1.PodStats{{
			PodRef:    statsv1alpha1.PodReference{Name: p.name, Namespace: c.ns, UID: p.uid},
			StartTime: metav1.NewTime(time.Now().Add(-time.Minute)),
			CPU:       &statsv1alpha1.CPUStats{Time: now, UsageNanoCores: u(20_000_000), UsageCoreNanoSeconds: u(5_000_000_000)},
			Memory:    &statsv1alpha1.MemoryStats{Time: now, UsageBytes: u(64 << 20), WorkingSetBytes: u(60 << 20), RSSBytes: u(50 << 20)},
			Containers: []statsv1alpha1.ContainerStats{{
				Name:      "checkout",
				StartTime: metav1.NewTime(time.Now().Add(-time.Minute)),
				CPU:       &statsv1alpha1.CPUStats{Time: now, UsageNanoCores: u(20_000_000), UsageCoreNanoSeconds: u(5_000_000_000)},
				Memory:    &statsv1alpha1.MemoryStats{Time: now, UsageBytes: u(64 << 20), WorkingSetBytes: u(60 << 20), RSSBytes: u(50 << 20)},
			}},
		}},
	}
	body, err := json.Marshal(summary)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/stats/summary", func(w http.ResponseWriter, r *http.Request) {
		if reason := fk.authorize(r, c); reason != "" {
			fk.mu.Lock()
			fk.denied = append(fk.denied, reason)
			fk.mu.Unlock()
			http.Error(w, reason, http.StatusForbidden)
			return
		}
		fk.mu.Lock()
		fk.authorized++
		fk.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "10250"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{kp.TLSCertificate(t)}}}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return fk
}

func (fk *fakeKubelet) authorize(r *http.Request, c *cluster) string {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "no bearer token"
	}
	ctx := r.Context()
	tr, err := c.k.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil || !tr.Status.Authenticated {
		return fmt.Sprintf("token not authenticated: %v %s", err, tr.Status.Error)
	}
	sar, err := c.k.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   tr.Status.User.Username,
		Groups: tr.Status.User.Groups,
		UID:    tr.Status.User.UID,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "get", Resource: "nodes", Subresource: "stats", Name: c.node,
		},
	}}, metav1.CreateOptions{})
	if err != nil || !sar.Status.Allowed {
		return fmt.Sprintf("%s may not get nodes/stats: %v %s", tr.Status.User.Username, err, sar.Status.Reason)
	}
	return ""
}

func (fk *fakeKubelet) counts() (int, []string) {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	return fk.authorized, append([]string(nil), fk.denied...)
}

// TestKubeKubeletStats: the agent's kubelet_stats against a kubelet with a
// self-signed certificate. With the base manifest's setting it refuses the
// certificate; with the AKS overlay's it reads /stats/summary, authorized by the
// agent ServiceAccount's token, and emits node, pod and container metrics that
// k8s_attributes enriches.
func TestKubeKubeletStats(t *testing.T) {
	c := newCluster(t)
	p := c.addPod(t, "x2x4z", e2e.FreeLoopbackIP(t))
	token := c.k.ServiceAccountToken(t, "otelcol-relay", "otelcol-relay-agent")

	run := func(t *testing.T, overlayDir string) (*e2e.Collector, *otlpfixture.Sink, *fakeKubelet) {
		nodeIP := e2e.FreeLoopbackIP(t, 10250)
		kubelet := startFakeKubelet(t, c, nodeIP, p)
		sink := c.tlsSink(t)
		aCA, aCert, aKey := c.tlsFiles(t, "agent-gateway")
		env := append(c.k.InCluster(t, token), agentEnv(t, overlayDir, map[string]string{
			"MY_POD_IP":               "127.0.0.1",
			"RELAY_OTLP_GRPC_PORT":    strconv.Itoa(e2e.FreePort(t)),
			"RELAY_OTLP_HTTP_PORT":    strconv.Itoa(e2e.FreePort(t)),
			"RELAY_HEALTH_PORT":       strconv.Itoa(e2e.FreePort(t)),
			"RELAY_METRICS_PORT":      strconv.Itoa(e2e.FreePort(t)),
			"K8S_NODE_NAME":           c.node,
			"K8S_NODE_IP":             nodeIP,
			"OTELCOL_RELAY_GATEWAY":   sink.GRPCAddr,
			"RELAY_GATEWAY_CA_FILE":   aCA,
			"RELAY_GATEWAY_CERT_FILE": aCert,
			"RELAY_GATEWAY_KEY_FILE":  aKey,
		})...)
		col := e2e.Start(t, "", e2e.Options{Env: env, ReadyTimeout: 2 * time.Minute, Args: []string{"--config", manifest.Dir("agent", "agent.yaml")}})
		return col, sink, kubelet
	}

	t.Run("base verifies the kubelet certificate", func(t *testing.T) {
		col, sink, kubelet := run(t, manifest.Dir("agent"))
		if err := col.WaitForOutput("x509", 90*time.Second); err != nil {
			t.Fatalf("no certificate verification error from kubelet_stats: %v\n%s", err, tail(col.Output()))
		}
		if n, denied := kubelet.counts(); n != 0 || len(denied) != 0 {
			t.Errorf("the kubelet served %d requests (%v) although its certificate is untrusted", n, denied)
		}
		if names := metricNames(sink); len(names) != 0 {
			t.Errorf("metrics arrived although the kubelet could not be read: %v", names)
		}
	})

	t.Run("aks skips verification and sends the token", func(t *testing.T) {
		col, sink, kubelet := run(t, manifest.Dir("overlays", "aks"))
		var names map[string]map[string]string
		ok := otlpfixture.WaitFor(90*time.Second, func() bool {
			names = metricNames(sink)
			return hasPrefix(names, "k8s.node.") && hasPrefix(names, "k8s.pod.") && hasPrefix(names, "container.")
		})
		n, denied := kubelet.counts()
		if !ok {
			t.Fatalf("want node, pod and container metrics; got %v (kubelet served %d, denied %v)\n%s", slices.Sorted(maps.Keys(names)), n, denied, tail(col.Output()))
		}
		if n == 0 || len(denied) != 0 {
			t.Errorf("kubelet served %d authorized requests, denied %v", n, denied)
		}
		res := names["k8s.pod.memory.usage"]
		if res == nil {
			t.Fatalf("no k8s.pod.memory.usage in %v", slices.Sorted(maps.Keys(names)))
		}
		for k, v := range c.identity(p) {
			if res[k] != v {
				t.Errorf("pod metric resource %s = %q, want %q (%v)", k, res[k], v, res)
			}
		}
	})
}

// metricNames maps each metric name the sink saw to its resource attributes.
func metricNames(s *otlpfixture.Sink) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, md := range s.Metrics() {
		rms := md.ResourceMetrics()
		for i := 0; i < rms.Len(); i++ {
			rm := rms.At(i)
			attrs := map[string]string{}
			rm.Resource().Attributes().Range(func(k string, v pcommon.Value) bool {
				attrs[k] = v.AsString()
				return true
			})
			forEachMetric(rm, func(m pmetric.Metric) { out[m.Name()] = attrs })
		}
	}
	return out
}

func hasPrefix(names map[string]map[string]string, prefix string) bool {
	for n := range names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}
