// SPDX-License-Identifier: Apache-2.0

package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// The agent against many pods on its own node (issue 44, item 4): -pods keeps
// podsPerNode pods a node, so the agent, which watches only its node's pods,
// always holds the same 100. Nodes hold more: the kubelet's default max-pods is
// 110, AKS allows 250, EKS with prefix delegation more. Each count here is that
// many pods on the agent's node, in a kube-apiserver of their own, and a fresh
// agent started against them.

var nodePodCounts = flag.String("node-pods", "", "pod counts on the agent's own node, comma separated, increasing (e.g. 110,250,500: the kubelet's default max-pods is 110, AKS allows 250): a kube-apiserver of its own holding that many pods, all on the agent's node, and a fresh agent started against each count; empty: not run")

// nodePodsPoint is the agent's memory, MiB, with Pods pods on its node, after
// its cache filled and 10 s of settling. The agent's config has no pprof
// extension, so there is no live heap to read: RSS and its anonymous part
// (heap and stacks) only.
type nodePodsPoint struct {
	Pods                int
	AgentRSS, AgentAnon float64
	AgentSynced         time.Duration // from start to every pod in its table
	CreatedPerSecs      float64
}

func parseNodePodCounts() ([]int, error) { return parseCounts("-node-pods", *nodePodCounts, 1) }

// onAgentNode puts every pod on the agent's node.
func onAgentNode(int) string { return agentNode }

// runNodePods measures each count in turn, adding pods to the agent's node in
// the same API server, which -pods' does not share.
func runNodePods(counts []int) ([]nodePodsPoint, error) {
	var points []nodePodsPoint
	err := measure("node-pods", func(t *runTB) {
		k := e2e.StartKube(t)
		agentToken := agentServiceAccount(t, k)
		created := 0
		for _, n := range counts {
			start := time.Now()
			createPods(t, k, created, n, onAgentNode)
			p := nodePodsPoint{Pods: n, CreatedPerSecs: float64(n-created) / time.Since(start).Seconds()}
			created = n
			log.Printf("node-pods: %d on %s (%.0f created a second)", n, agentNode, p.CreatedPerSecs)
			p.AgentRSS, p.AgentAnon, p.AgentSynced = agentMemory(t, k, agentToken, n)
			log.Printf("node-pods: %d: agent %.0f MiB (anon %.0f), synced after %s", n, p.AgentRSS, p.AgentAnon, p.AgentSynced.Round(100*time.Millisecond))
			points = append(points, p)
		}
	})
	return points, err
}

// agentResources is the agent container's memory request and limit in
// deploy/agent/daemonset.yaml, empty if it cannot be read.
func agentResources() (request, limit string) {
	raw, err := os.ReadFile(filepath.Join(e2e.RepoRoot(), "deploy", "agent", "daemonset.yaml"))
	if err != nil {
		return "", ""
	}
	var ds appsv1.DaemonSet
	if yaml.Unmarshal(raw, &ds) != nil || len(ds.Spec.Template.Spec.Containers) == 0 {
		return "", ""
	}
	res := ds.Spec.Template.Spec.Containers[0].Resources
	return res.Requests.Memory().String(), res.Limits.Memory().String()
}

// writeNodePods writes the agent's memory against its node's pods.
func (r *report) writeNodePods(w func(string, ...any)) {
	if len(r.NodePods) == 0 {
		return
	}
	w("## Agent memory against its node's pods\n\n")
	w("A real kube-apiserver of its own holding that many pods, all on %s (%d a ReplicaSet, in %d namespaces, each with two containers, labels, annotations and a status as a kubelet writes it); a fresh agent (deploy/agent/agent.yaml on %s, with its ServiceAccount and RBAC: its k8s_attributes watches that node's pods and, for the deployment's name, the ReplicaSets' metadata) for each count, read 10 s after its k8s_attributes has added every pod. MiB; anon is the heap and stacks. The agent's config has no pprof extension, so no live heap is read: RSS and anon only. The agent runs without a memory limit here (GOGC alone paces its collections).", agentNode, podsPerReplicaSet, podNamespaces, agentNode)
	if req, lim := agentResources(); req != "" {
		w(" deploy/agent/daemonset.yaml requests %s and limits %s; agent.yaml's memory_limiter and gomemlimit take their limits as a share of it.", req, lim)
	}
	w("\n\n")
	w("| pods on the node | agent RSS | agent anon | anon, KiB a pod over the first count | synced after | pods created a second |\n|---|---|---|---|---|---|\n")
	first := r.NodePods[0]
	for _, p := range r.NodePods {
		per := "-"
		if p.Pods > first.Pods {
			per = fmt.Sprintf("%.1f", (p.AgentAnon-first.AgentAnon)*1024/float64(p.Pods-first.Pods))
		}
		w("| %d | %.0f | %.0f | %s | %s | %.0f |\n", p.Pods, p.AgentRSS, p.AgentAnon, per, p.AgentSynced.Round(100*time.Millisecond), p.CreatedPerSecs)
	}
	w("\n")
}
