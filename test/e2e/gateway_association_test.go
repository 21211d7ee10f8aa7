// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// TestGatewayAssociatesRelayedLogsByIdentityNotConnection runs gateway.yaml's logs
// pipeline against a real kube-apiserver holding two pods: the application pod the
// logs are about, and a fluent-bit pod whose IP is the address the logs arrive
// from (127.0.0.1). Logs that name their pod (on the resource, or on the records as
// fluent-bit's logs_body_key_attributes leaves it) get that pod's metadata; logs
// that name no pod get none, and never fluent-bit's.
func TestGatewayAssociatesRelayedLogsByIdentityNotConnection(t *testing.T) {
	k := e2e.StartKube(t)
	ctx := context.Background()
	app := createPod(t, k, "payments", "checkout-7d9f8b6c5-x2x4z", "node-app", "10.244.1.17")
	createPod(t, k, "logging", "fluent-bit-x7k2p", "node-fluent-bit", "127.0.0.1")

	def := newTLSBackend(t, "default")
	g := newGatewayEnv(t, def, nil)
	g.env = append(g.env, "KUBECONFIG="+k.Kubeconfig) // later entries win
	e2e.Start(t, "", e2e.Options{Env: g.env, Args: plaintextGateway(), ReadyTimeout: 90 * time.Second})
	client := e2e.NewHTTPClient("http://"+g.httpAddr, nil)

	// The informers sync in the background; resend until the pod is known.
	var seq int64
	send := func(ld plog.Logs) {
		t.Helper()
		if err := client.SendLogs(ctx, ld, otlpfixture.Encoding{}); err != nil {
			t.Fatal(err)
		}
	}
	enriched := func() bool {
		for _, ld := range def.sink.Logs() {
			if v, ok := ld.ResourceLogs().At(0).Resource().Attributes().Get("k8s.pod.uid"); ok && v.Str() == string(app.UID) {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(90 * time.Second)
	for !enriched() {
		if time.Now().After(deadline) {
			t.Fatalf("no log was associated with pod uid %s within 90s", app.UID)
		}
		send(otlpfixture.FluentBitLogs(1, seq))
		seq++
		time.Sleep(time.Second)
	}

	// Now the processor knows both pods. Send the two other shapes once each.
	def.sink.Reset()
	anonymous := plog.NewLogs() // plain fluent-bit records: no resource attributes
	lr := anonymous.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr("a line from a tail input")
	lr.Attributes().PutStr("case", "anonymous")
	send(anonymous)

	onRecords := plog.NewLogs() // identity as record attributes (logs_body_key_attributes)
	lr = onRecords.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr("a line with its pod on the record")
	lr.Attributes().PutStr("case", "record-attributes")
	lr.Attributes().PutStr("k8s.pod.name", "checkout-7d9f8b6c5-x2x4z")
	lr.Attributes().PutStr("k8s.namespace.name", "payments")
	send(onRecords)

	// A record of the warm-up loop still in the gateway's queue can arrive after
	// the Reset: wait for the two cases, not for any two records.
	seen := map[string]bool{}
	for deadline := time.Now().Add(time.Minute); !seen["anonymous"] || !seen["record-attributes"]; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("cases delivered within 1m: %v", seen)
		}
		checkAssociationCases(t, def.sink.Logs(), seen, string(app.UID))
	}
}

// checkAssociationCases marks in seen each case of lds and fails on a case with the wrong pod.
func checkAssociationCases(t *testing.T, lds []plog.Logs, seen map[string]bool, appUID string) {
	t.Helper()
	for _, ld := range lds {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			res := rl.Resource().Attributes()
			for j := 0; j < rl.ScopeLogs().Len(); j++ {
				lrs := rl.ScopeLogs().At(j).LogRecords()
				for n := 0; n < lrs.Len(); n++ {
					c, _ := lrs.At(n).Attributes().Get("case")
					seen[c.Str()] = true
					uid, hasUID := res.Get("k8s.pod.uid")
					node, _ := res.Get("k8s.node.name")
					switch c.Str() {
					case "anonymous":
						if hasUID || node.Str() != "" {
							t.Fatalf("a log naming no pod was associated with pod uid %q on node %q (the connection's pod is fluent-bit on node-fluent-bit): %v", uid.Str(), node.Str(), res.AsRaw())
						}
					case "record-attributes":
						if uid.Str() != appUID || node.Str() != "node-app" {
							t.Fatalf("a log naming its pod on the record got resource %v, want k8s.pod.uid %s and k8s.node.name node-app", res.AsRaw(), appUID)
						}
					}
				}
			}
		}
	}
}

func createPod(t *testing.T, k *e2e.Kube, namespace, name, node, ip string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	if _, err := k.Client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); err != nil {
		if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("namespace %s: %v", namespace, err)
		}
	}
	pod, err := k.Client.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/" + name + ":1"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod %s/%s: %v", namespace, name, err)
	}
	// No kubelet runs: write the status a kubelet would, with the pod's IP.
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
	pod, err = k.Client.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("status of pod %s/%s: %v", namespace, name, err)
	}
	return pod
}
