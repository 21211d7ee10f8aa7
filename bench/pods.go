// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/scenario"
)

// Memory against the pods in the cluster (issue: cost as work grows): the relay's
// k8s_attributes caches every pod of the cluster (and the ReplicaSets its
// deployment names come from), the agent's only its node's. Each point starts a
// fresh relay and a fresh agent against a real kube-apiserver holding that many
// pods, waits until each has added them all to its table (its own
// otelcol_k8s_watcher_pod_added), lets it settle and reads its memory.

var podCounts = flag.String("pods", "", "pod counts for the memory curve against the pods in the cluster, comma separated (e.g. 1000,10000,50000): a real kube-apiserver (hack/kube-peers.sh) holding that many, the relay and the agent each started against it; empty: not run")

const (
	podsPerNode       = 100 // the kubelet's default max-pods is 110
	podsPerReplicaSet = 10
	podNamespaces     = 100
	agentNode         = "node-00000"
)

// podsPoint is one pod count's memory, MiB: RSS, and its anonymous part (heap
// and stacks), after the cache filled and 10 s of settling.
type podsPoint struct {
	Pods                          int
	RelayRSS, RelayAnon           float64
	RelayLive                     float64 // heap in use after a collection
	AgentRSS, AgentAnon           float64
	AgentPods                     int
	RelaySynced, AgentSynced      time.Duration // from start to every pod in its table
	CreateSeconds, CreatedPerSecs float64
}

func parsePodCounts() ([]int, error) { return parseCounts("-pods", *podCounts, podsPerNode) }

// parseCounts reads a flag's comma-separated counts, each at least least and
// greater than the one before it.
func parseCounts(flagName, value string, least int) ([]int, error) {
	if value == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(value, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < least || (len(out) > 0 && n <= out[len(out)-1]) {
			return nil, fmt.Errorf("%s %q: want increasing counts of at least %d", flagName, value, least)
		}
		out = append(out, n)
	}
	return out, nil
}

// runPods measures each pod count in turn, adding pods to the same API server.
func runPods(counts []int) ([]podsPoint, error) {
	var points []podsPoint
	err := measure("pods", func(t *runTB) {
		k := e2e.StartKube(t)
		agentToken := agentServiceAccount(t, k)
		created := 0
		for _, n := range counts {
			start := time.Now()
			createPods(t, k, created, n, spreadNode)
			p := podsPoint{Pods: n, CreateSeconds: time.Since(start).Seconds()}
			p.CreatedPerSecs = float64(n-created) / p.CreateSeconds
			created = n
			log.Printf("pods: %d in the API server (%.0f created a second)", n, p.CreatedPerSecs)
			p.RelayRSS, p.RelayAnon, p.RelayLive, p.RelaySynced = relayMemory(t, k, n)
			p.AgentPods = min(n, podsPerNode)
			p.AgentRSS, p.AgentAnon, p.AgentSynced = agentMemory(t, k, agentToken, p.AgentPods)
			log.Printf("pods: %d: relay %.0f MiB (anon %.0f, live heap %.0f), agent %.0f MiB (anon %.0f)", n, p.RelayRSS, p.RelayAnon, p.RelayLive, p.AgentRSS, p.AgentAnon)
			points = append(points, p)
		}
	})
	return points, err
}

// agentServiceAccount is a token of the agent's ServiceAccount, with the
// agent's own RBAC: deploy/agent/rbac.yaml as kubectl applies it.
func agentServiceAccount(t *runTB, k *e2e.Kube) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "otelcol-relay"}}
	if _, err := k.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k.MustKubectl(t, "apply", "-f", filepath.Join(e2e.RepoRoot(), "deploy", "agent", "rbac.yaml"))
	return k.ServiceAccountToken(t, "otelcol-relay", "otelcol-relay-agent")
}

// spreadNode is pod i's node when the pods are spread over the cluster:
// podsPerNode a node.
func spreadNode(i int) string { return fmt.Sprintf("node-%05d", i/podsPerNode) }

// createPods creates pods from..to-1 (and their namespaces and ReplicaSets),
// as a kubelet would leave them: running, with an IP, pod i on node(i).
func createPods(t *runTB, k *e2e.Kube, from, to int, node func(i int) string) {
	ctx := context.Background()
	// The harness's client is rate-limited for tests; this one is not.
	cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 5000, 10000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for ns := 0; ns < podNamespaces && from == 0; ns++ {
		o := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-%03d", ns)}}
		if _, err := c.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The ReplicaSets first: a pod's owner reference names its ReplicaSet's UID,
	// which k8s_attributes follows to the deployment's name.
	rsFrom, rsTo := from/podsPerReplicaSet, (to+podsPerReplicaSet-1)/podsPerReplicaSet
	uids := make([]types.UID, rsTo-rsFrom)
	parallel(t, rsFrom, rsTo, func(i int) error {
		uid, err := createReplicaSet(ctx, c, i)
		uids[i-rsFrom] = uid
		return err
	})
	parallel(t, from, to, func(i int) error { return createPod(ctx, c, i, uids[i/podsPerReplicaSet-rsFrom], node(i)) })
}

// parallel runs f(from..to-1), 16 at a time, and fails on the first error.
func parallel(t *runTB, from, to int, f func(int) error) {
	var g errgroup.Group
	g.SetLimit(16)
	for i := from; i < to; i++ {
		g.Go(func() error { return f(i) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// replicaSetOf is ReplicaSet i's namespace, name and labels.
func replicaSetOf(i int) (ns, name string, labels map[string]string) {
	app := fmt.Sprintf("svc-%05d", i)
	return fmt.Sprintf("team-%03d", i%podNamespaces), app + "-7d9f8b6c5",
		map[string]string{"app": app, "pod-template-hash": "7d9f8b6c5", "app.kubernetes.io/part-of": "bench"}
}

func createReplicaSet(ctx context.Context, c *kubernetes.Clientset, i int) (types.UID, error) {
	ns, name, labels := replicaSetOf(i)
	replicas := int32(podsPerReplicaSet)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: labels["app"], UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/" + labels["app"] + ":1.0"}}}}},
	}
	got, err := c.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("replicaset %s/%s: %w", ns, name, err)
	}
	return got.UID, nil
}

// createPod creates pod i of ReplicaSet i/podsPerReplicaSet (whose UID is rs)
// on node.
func createPod(ctx context.Context, c *kubernetes.Clientset, i int, rs types.UID, node string) error {
	ns, rsName, labels := replicaSetOf(i / podsPerReplicaSet)
	ip := fmt.Sprintf("198.18.%d.%d", (i/250)%256, i%250+1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%05d", rsName, i), Namespace: ns, Labels: labels,
			Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-12-01T08:00:00Z", "prometheus.io/scrape": "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName, UID: rs}},
		},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{
				{Name: "app", Image: "registry.example.com/" + labels["app"] + ":1.0"},
				{Name: "sidecar", Image: "registry.example.com/proxy:2.3"},
			},
		},
	}
	created, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("pod %d: %w", i, err)
	}
	// No kubelet runs: write the status a kubelet would.
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		StartTime: &metav1.Time{Time: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)},
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", ContainerID: fmt.Sprintf("containerd://%064x", 2*i), Ready: true},
			{Name: "sidecar", ContainerID: fmt.Sprintf("containerd://%064x", 2*i+1), Ready: true},
		}}
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("status of pod %d: %w", i, err)
	}
	return nil
}

// relayMemory starts the shipped gateway against k and reads its memory once
// its k8s_attributes holds all n pods.
func relayMemory(t *runTB, k *e2e.Kube, n int) (rss, anon, live float64, synced time.Duration) {
	r := scenario.NewRig(t, scenario.RigOptions{Env: []string{"KUBECONFIG=" + k.Kubeconfig}})
	start := time.Now()
	col := r.Start(t)
	defer col.Stop(time.Minute) //nolint:errcheck // the measurement is taken
	rss, anon, synced = settledMemory(t, col, r.GW.MetricsAddr, n, start)
	return rss, anon, liveHeap(t, r.GW.PprofAddr, n), synced
}

// liveHeap is the collector's heap in use right after a collection, MiB: what
// a memory limit must hold whatever GOGC lets accumulate above it. Its heap
// profile is kept (pods-<n>-relay.heap.pprof, `go tool pprof -sample_index=inuse_space`).
func liveHeap(t *runTB, pprofAddr string, n int) float64 {
	raw, err := e2e.Get("http://"+pprofAddr+"/debug/pprof/heap?gc=1", time.Minute)
	if err != nil {
		t.Fatalf("heap profile: %v", err)
	}
	if err = os.WriteFile(profilePath("relay", fmt.Sprintf("pods%d", n), "heap.pprof"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := profile.ParseData(raw)
	if err != nil {
		t.Fatalf("heap profile: %v", err)
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "inuse_space" {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("heap profile has no inuse_space")
	}
	var sum int64
	for _, s := range p.Sample {
		sum += s.Value[idx]
	}
	return float64(sum) / (1 << 20)
}

// agentMemory starts the shipped agent (deploy/agent/agent.yaml) as on node
// agentNode, with its ServiceAccount, and reads its memory once its
// k8s_attributes holds the node's n pods. Its gateway does not answer: the
// cache, not the export, is measured.
func agentMemory(t *runTB, k *e2e.Kube, token string, n int) (rss, anon float64, synced time.Duration) {
	env, wrapper := e2e.InPodBinary(t, token, k.CA.CertPEM, k.Host, k.Port)
	gw := e2e.NewBackendTLS(t, "agent-gateway")
	metrics := e2e.FreePort(t)
	env = append(env,
		"MY_POD_IP=127.0.0.1",
		"RELAY_OTLP_GRPC_PORT="+strconv.Itoa(e2e.FreePort(t)),
		"RELAY_OTLP_HTTP_PORT="+strconv.Itoa(e2e.FreePort(t)),
		"RELAY_HEALTH_PORT="+strconv.Itoa(e2e.FreePort(t)),
		"RELAY_METRICS_PORT="+strconv.Itoa(metrics),
		"K8S_NODE_NAME="+agentNode,
		"K8S_NODE_IP="+e2e.FreeLoopbackIP(t),
		"OTELCOL_RELAY_GATEWAY="+e2e.FreeAddr(t),
		"RELAY_GATEWAY_CA_FILE="+gw.CAFile,
		"RELAY_GATEWAY_CERT_FILE="+gw.CertFile,
		"RELAY_GATEWAY_KEY_FILE="+gw.KeyFile,
	)
	start := time.Now()
	col := e2e.Start(t, "", e2e.Options{Env: env, Binary: wrapper, ReadyTimeout: 2 * time.Minute,
		Args: []string{"--config", filepath.Join(e2e.RepoRoot(), "deploy", "agent", "agent.yaml")}})
	defer col.Stop(time.Minute) //nolint:errcheck // the measurement is taken
	return settledMemory(t, col, fmt.Sprintf("127.0.0.1:%d", metrics), n, start)
}

// settledMemory waits until the collector's k8s_attributes has added n pods,
// then 10 s, and returns its RSS and anonymous RSS in MiB.
func settledMemory(t *runTB, col *e2e.Collector, metricsAddr string, n int, start time.Time) (rss, anon float64, synced time.Duration) {
	var added float64
	if !otlpfixture.WaitFor(10*time.Minute, func() bool {
		added = e2e.MetricSum(metricsAddr, "otelcol_k8s_watcher_pod_added")
		return added >= float64(n) || !col.Running()
	}) || !col.Running() {
		t.Fatalf("k8s_attributes added %.0f of %d pods (running: %v): %s", added, n, col.Running(), e2e.Tail(col.Output(), 800))
	}
	synced = time.Since(start)
	time.Sleep(10 * time.Second)
	st, err := e2e.ReadProc(col.PID())
	if err != nil {
		t.Fatal(err)
	}
	return float64(st.RSS) / (1 << 20), float64(st.Anon) / (1 << 20), synced
}

// writePods writes the memory curve's table.
func (r *report) writePods(w func(string, ...any)) {
	if len(r.Pods) == 0 {
		return
	}
	w("## Memory against the pods in the cluster\n\n")
	w("A real kube-apiserver holding that many pods (%d a node, %d a ReplicaSet, in %d namespaces, each with two containers, labels, annotations and a status as a kubelet writes it); a fresh relay (config/gateway.yaml, its k8s_attributes watching every pod and ReplicaSet) and a fresh agent (deploy/agent/agent.yaml on %s, watching its node's pods only) for each count, read 10 s after each has added every pod it watches. MiB; anon is the heap and stacks, the live heap what the relay's heap holds right after a collection (its heap profile, under -profiles).\n\n", podsPerNode, podsPerReplicaSet, podNamespaces, agentNode)
	w("| pods | relay RSS | relay anon | relay live heap | live heap, KiB a pod over the first count | relay synced after | agent's pods | agent RSS | agent anon | pods created a second |\n|---|---|---|---|---|---|---|---|---|---|\n")
	first := r.Pods[0]
	for _, p := range r.Pods {
		per := "-"
		if p.Pods > first.Pods {
			per = fmt.Sprintf("%.1f", (p.RelayLive-first.RelayLive)*1024/float64(p.Pods-first.Pods))
		}
		w("| %d | %.0f | %.0f | %.0f | %s | %s | %d | %.0f | %.0f | %.0f |\n", p.Pods, p.RelayRSS, p.RelayAnon, p.RelayLive, per,
			p.RelaySynced.Round(100*time.Millisecond), p.AgentPods, p.AgentRSS, p.AgentAnon, p.CreatedPerSecs)
	}
	w("\n")
}
