// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

// The cluster the attribute and kubelet tests run the built binary against: a
// real kube-apiserver with the aks overlay applied, a Deployment's ReplicaSet and
// its pods, certificates from the cluster's CA and the agent's environment as the
// DaemonSet renders it.

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// cluster is the API server with the aks overlay applied and a Deployment's pods.
type cluster struct {
	k        *e2e.Kube
	ns       string
	node     string
	rsUID    types.UID
	rsName   string
	dirCerts string
}

type pod struct {
	name string
	uid  string
	ip   string
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	k := e2e.StartKube(t)
	k.MustKubectl(t, "apply", "--server-side", "-k", manifest.Dir("overlays", "aks"))
	c := &cluster{k: k, ns: "payments", node: "node-a", dirCerts: t.TempDir()}
	ctx := context.Background()
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "checkout"}
	replicas := int32(2)
	dep, err := k.Client.AppsV1().Deployments(c.ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No controller-manager runs: create the ReplicaSet the Deployment controller would.
	rsLabels := map[string]string{"app": "checkout", "pod-template-hash": "7d9f8b6c5"}
	rs, err := k.Client.AppsV1().ReplicaSets(c.ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "checkout-7d9f8b6c5",
			Labels:          rsLabels,
			OwnerReferences: []metav1.OwnerReference{ownerRef("apps/v1", "Deployment", dep.Name, dep.UID)},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: rsLabels},
			Template: podTemplate(rsLabels),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.rsUID, c.rsName = rs.UID, rs.Name
	return c
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "checkout", Image: "checkout:1"}}},
	}
}

func ownerRef(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &yes, BlockOwnerDeletion: &yes}
}

// addPod creates a pod of the ReplicaSet on the node and sets its IP through the
// status subresource, as the kubelet does.
func (c *cluster) addPod(t *testing.T, suffix, ip string) pod {
	t.Helper()
	ctx := context.Background()
	p, err := c.k.Client.CoreV1().Pods(c.ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            c.rsName + "-" + suffix,
			Labels:          map[string]string{"app": "checkout", "pod-template-hash": "7d9f8b6c5"},
			OwnerReferences: []metav1.OwnerReference{ownerRef("apps/v1", "ReplicaSet", c.rsName, c.rsUID)},
		},
		Spec: corev1.PodSpec{NodeName: c.node, Containers: []corev1.Container{{Name: "checkout", Image: "checkout:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	p.Status.HostIP = "127.0.0.1"
	p.Status.StartTime = &metav1.Time{Time: time.Now()}
	if _, err := c.k.Client.CoreV1().Pods(c.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pod{name: p.Name, uid: string(p.UID), ip: ip}
}

// identity is the resource k8s_attributes gives a record of pod p.
func (c *cluster) identity(p pod) map[string]string {
	return map[string]string{
		"k8s.pod.uid":         p.uid,
		"k8s.pod.name":        p.name,
		"k8s.namespace.name":  c.ns,
		"k8s.node.name":       c.node,
		"k8s.deployment.name": "checkout",
	}
}

// tlsFiles writes a CA bundle and a client keypair from the cluster's CA, the shape
// of the projected certwatch directories the manifests mount.
func (c *cluster) tlsFiles(t *testing.T, name string) (ca, cert, key string) {
	t.Helper()
	dir := filepath.Join(c.dirCerts, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kp := c.k.CA.Peer(t, testcerts.Options{CommonName: name})
	ca, cert, key = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for p, b := range map[string][]byte{ca: c.k.CA.CertPEM, cert: kp.CertPEM, key: kp.KeyPEM} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ca, cert, key
}

// tlsSink is an OTLP sink serving a certificate from the cluster's CA.
func (c *cluster) tlsSink(t *testing.T) *otlpfixture.Sink {
	t.Helper()
	kp := c.k.CA.Server(t, testcerts.Options{CommonName: "sink"})
	return e2e.NewSink(t, otlpfixture.SinkOptions{TLS: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{kp.TLSCertificate(t)}}})
}

// agentEnv is the environment the DaemonSet of overlay gives the agent (from the
// rendered manifest), with the downward-API and file values pointed at this test.
func agentEnv(t *testing.T, overlayDir string, over map[string]string) []string {
	t.Helper()
	r := manifest.Render(t, overlayDir)
	if len(r.DaemonSets) != 1 {
		t.Fatalf("%s renders %d DaemonSets, want 1", overlayDir, len(r.DaemonSets))
	}
	var env []string
	for _, e := range r.DaemonSets[0].Spec.Template.Spec.Containers[0].Env {
		if _, ok := over[e.Name]; ok || e.ValueFrom != nil {
			continue
		}
		env = append(env, e.Name+"="+e.Value)
	}
	for k, v := range over {
		env = append(env, k+"="+v)
	}
	return env
}
