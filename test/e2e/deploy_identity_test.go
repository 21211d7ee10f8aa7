// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

// Pod identity through both binaries: an application sends to the agent
// (deploy/agent/agent.yaml), the agent to the gateway (deploy/base/gateway.yaml)
// over its mutual TLS, the gateway to a sink. Whatever the client writes, the
// resource leaving the gateway names the pod the connection came from.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// claimsOf is every identity attribute a client could write to pass its logs
// off as victim's, on the resource and on each record.
func claimsOf(victim *corev1.Pod) map[string]string {
	return map[string]string{
		"k8s.pod.uid":         string(victim.UID),
		"k8s.pod.name":        victim.Name,
		"k8s.namespace.name":  victim.Namespace,
		"k8s.pod.ip":          victim.Status.PodIP,
		"k8s.node.name":       "node-victim",
		"k8s.deployment.name": "vault",
		"container.id":        "containerd://victim",
	}
}

func TestKubeIdentityThroughAgentAndGateway(t *testing.T) {
	c := newCluster(t)
	attacker := c.addPod(t, "att4k", e2e.FreeLoopbackIP(t))
	victim := createPod(t, c.k, "secrets", "vault-0", c.node, e2e.FreeLoopbackIP(t))
	// A hostNetwork pod has the node's address: k8s_attributes never associates
	// a connection with it (every hostNetwork pod of a node shares that IP).
	hostIP := e2e.FreeLoopbackIP(t)
	createHostNetworkPod(t, c, "kube-system", "node-exporter-abcde", hostIP)

	gw := startAttributesGateway(t, c)
	ag := startAttributesAgentTo(t, c, gw.grpcAddr)
	claims := claimsOf(victim)

	for _, proto := range []string{"grpc", "http"} {
		t.Run("claims on resource and records over "+proto, func(t *testing.T) {
			expectEnriched(t, "claims-"+proto, gw.sink, c.identity(attacker), func(m string) error {
				return ag.send(proto, attacker.ip, m, claims, claims)
			}, gw.col, ag.col)
			expectNoRecordClaims(t, gw.sink, "claims-"+proto, claims)
		})
		t.Run("claims on records only over "+proto, func(t *testing.T) {
			expectEnriched(t, "record-claims-"+proto, gw.sink, c.identity(attacker), func(m string) error {
				return ag.send(proto, attacker.ip, m, nil, claims)
			}, gw.col, ag.col)
			expectNoRecordClaims(t, gw.sink, "record-claims-"+proto, claims)
		})
	}

	// The gateway alone: a certificate holder whose resource names a pod (as an
	// agent's does) and whose records claim another (as an agent that let them
	// through would send) keeps the resource's pod, over gRPC (the agents' port)
	// and HTTP (fluent-bit's).
	for _, proto := range []string{"grpc", "http"} {
		t.Run("gateway keeps a resource's pod over "+proto, func(t *testing.T) {
			own := map[string]string{"k8s.pod.uid": attacker.uid}
			expectEnriched(t, "gateway-"+proto, gw.sink, c.identity(attacker), func(m string) error {
				return gw.sendAsAgent(t, c, proto, m, own, claims)
			}, gw.col, ag.col)
			// The keys the gateway lifts are removed from the records; the
			// others are record attributes it does not read.
			lifted := map[string]string{"k8s.pod.uid": "", "k8s.pod.name": "", "k8s.namespace.name": ""}
			expectNoRecordClaims(t, gw.sink, "gateway-"+proto, lifted)
		})
	}

	// A sender whose address is no pod's (a hostNetwork pod, the node itself)
	// gets no identity at all: not the one it claims, not another pod's.
	for name, ip := range map[string]string{"hostNetwork pod": hostIP, "address of no pod": e2e.FreeLoopbackIP(t)} {
		t.Run(name+" gets no identity", func(t *testing.T) {
			mark := "unknown-" + ip
			if !otlpfixture.WaitFor(60*time.Second, func() bool {
				if err := ag.send("grpc", ip, mark, claims, claims); err != nil {
					t.Logf("send: %v", err)
				}
				return otlpfixture.WaitFor(5*time.Second, func() bool { return resourceOf(gw.sink, mark) != nil })
			}) {
				t.Fatalf("the record from %s never reached the sink\ngateway:\n%s\nagent:\n%s", ip, tail(gw.col.Output()), tail(ag.col.Output()))
			}
			res := resourceOf(gw.sink, mark)
			for k := range claims {
				if v, ok := res[k]; ok {
					t.Errorf("resource from %s has %s = %q; want none (resource %v)", ip, k, v, res)
				}
			}
			expectNoRecordClaims(t, gw.sink, mark, claims)
		})
	}
}

func createHostNetworkPod(t *testing.T, c *cluster, namespace, name, ip string) {
	t.Helper()
	ctx := context.Background()
	p, err := c.k.Client.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			NodeName: c.node, HostNetwork: true,
			Containers: []corev1.Container{{Name: "main", Image: "node-exporter:1"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: ip}
	if _, err := c.k.Client.CoreV1().Pods(namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// send is an application's OTLP exporter on proto ("grpc" or "http"),
// connecting to the agent from ip, with onResource and onRecord attributes.
func (ag *attributesAgent) send(proto, ip, mark string, onResource, onRecord map[string]string) error {
	ld := markedLogs(mark, onResource, onRecord)
	ld.ResourceLogs().At(0).Resource().Attributes().PutStr("service.name", "checkout")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return d.DialContext(ctx, network, addr)
	}
	if proto == "http" {
		client := e2e.NewHTTPClient(fmt.Sprintf("http://127.0.0.1:%d", ag.httpPort), nil)
		client.Client.Transport.(*http.Transport).DialContext = dial
		return client.SendLogs(ctx, ld, otlpfixture.Encoding{})
	}
	cc, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", ag.grpcPort),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return dial(ctx, "tcp", addr) }))
	if err != nil {
		return err
	}
	defer cc.Close()
	return otlpfixture.SendLogsGRPC(ctx, cc, ld)
}

// expectNoRecordClaims fails if a record marked with a mark starting with
// prefix still carries one of the claimed attributes.
func expectNoRecordClaims(t *testing.T, s *otlpfixture.Sink, prefix string, claims map[string]string) {
	t.Helper()
	for _, ld := range s.Logs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			sls := ld.ResourceLogs().At(i).ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					attrs := lrs.At(k).Attributes()
					m, _ := attrs.Get("e2e.mark")
					if len(m.Str()) < len(prefix) || m.Str()[:len(prefix)] != prefix {
						continue
					}
					for key := range claims {
						if v, ok := attrs.Get(key); ok {
							t.Errorf("record %s left the gateway with %s = %q", m.Str(), key, v.Str())
						}
					}
				}
			}
		}
	}
}

// sendAsAgent sends to the gateway with a client certificate of the cluster's
// CA, over proto ("grpc": the agents' receiver, "http": fluent-bit's).
func (gw *attributesGateway) sendAsAgent(t *testing.T, c *cluster, proto, mark string, onResource, onRecord map[string]string) error {
	ld := markedLogs(mark, onResource, onRecord)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if proto == "http" {
		return gw.fluentBit.SendLogs(ctx, ld, otlpfixture.Encoding{})
	}
	kp := c.k.CA.Peer(t, testcerts.Options{CommonName: "agent"})
	creds := credentials.NewTLS(&tls.Config{RootCAs: c.k.CA.Pool(), Certificates: []tls.Certificate{kp.TLSCertificate(t)}, ServerName: "localhost"})
	cc, err := grpc.NewClient(gw.grpcAddr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer cc.Close()
	return otlpfixture.SendLogsGRPC(ctx, cc, ld)
}

// markedLogs is one record marked mark, with onResource and onRecord attributes.
func markedLogs(mark string, onResource, onRecord map[string]string) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	for k, v := range onResource {
		rl.Resource().Attributes().PutStr(k, v)
	}
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr("order placed")
	lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	lr.Attributes().PutStr("e2e.mark", mark)
	for k, v := range onRecord {
		lr.Attributes().PutStr(k, v)
	}
	return ld
}
