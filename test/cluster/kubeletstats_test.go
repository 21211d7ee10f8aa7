// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

type backendMetric struct {
	Name     string            `json:"name"`
	Resource map[string]string `json:"resource"`
}

// podMetrics is, per metric family wanted, the pods the backend got it for.
func podMetrics(_ *testing.T, backendIP string) (map[string]map[string]bool, error) {
	var ms []backendMetric
	if err := getJSON("http://"+backendIP+":8080/metrics", &ms); err != nil {
		return nil, err
	}
	got := map[string]map[string]bool{}
	for _, m := range ms {
		for _, fam := range []string{"k8s.pod.cpu.", "k8s.pod.memory.", "k8s.pod.network."} {
			if strings.HasPrefix(m.Name, fam) && m.Resource["k8s.pod.name"] != "" {
				if got[fam] == nil {
					got[fam] = map[string]bool{}
				}
				got[fam][m.Resource["k8s.namespace.name"]+"/"+m.Resource["k8s.pod.name"]] = true
			}
		}
	}
	return got, nil
}

// TestKubeletStatsFromRealKubelet: the agent DaemonSet scrapes the real kubelet's
// /stats/summary on the node IP with its ServiceAccount token, through the relay
// to the backend: pod CPU, memory and network metrics of the real pods, named by
// k8s.pod.name. The aks overlay skips verifying the kubelet's certificate; then the
// agent is switched to the base's setting (verify, against the cluster CA of its
// ServiceAccount) and must still get them, since this kubelet's serving
// certificate is signed by that CA for the node's IP.
func TestKubeletStatsFromRealKubelet(t *testing.T) {
	install(t)
	backendIP := podIP(t, backendNS, "app=backend")
	want := relayNS + "/otelcol-relay-0"
	// The backend keeps the last sample of each series for the whole package run:
	// each check starts from nothing, so samples an earlier test's agent sent do not
	// pass it.
	check := func(what string) {
		if err := getJSON("http://"+backendIP+":8080/metrics/reset", nil); err != nil {
			t.Fatal(err)
		}
		eventually(t, what, readyBudget, func() string {
			got, err := podMetrics(t, backendIP)
			if err != nil {
				return err.Error()
			}
			for _, fam := range []string{"k8s.pod.cpu.", "k8s.pod.memory.", "k8s.pod.network."} {
				if !got[fam][want] {
					return fmt.Sprintf("no %s* for %s yet (%d pods have one)", fam, want, len(got[fam]))
				}
			}
			pods := make([]string, 0, len(got["k8s.pod.cpu."]))
			for p := range got["k8s.pod.cpu."] {
				pods = append(pods, p)
			}
			sort.Strings(pods)
			t.Logf("%s: pod metrics for %d pods: %v", what, len(pods), pods)
			return ""
		})
	}
	check("kubelet_stats with the aks overlay (verification skipped)")

	// The base's setting: verify the kubelet's certificate. The aks install's comes
	// back at the end.
	t.Cleanup(func() { restoreInstall(t) })
	mustKubectl(t, "", "-n", relayNS, "set", "env", "daemonset/otelcol-relay-agent", "KUBELET_INSECURE_SKIP_VERIFY=false")
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "daemonset/otelcol-relay-agent", "--timeout=5m")
	check("kubelet_stats verifying the kubelet's certificate (the base's setting)")
	logs, _ := kubectl(t, "", "-n", relayNS, "logs", "daemonset/otelcol-relay-agent")
	if strings.Contains(logs, "x509") {
		t.Errorf("the agent logs certificate errors:\n%s", tail(logs, 20))
	}
}
