// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestAgentAssociatesByConnection is the AKS seed, both ways. An application
// Deployment that names no pod sends OTLP/HTTP to the agent's Service
// (internalTrafficPolicy: Local): the agent sees the pod's own IP, and
// k8s_attributes gives every record the pod, its Deployment and the node. The same
// application sending to its node's IP, as the seed's apps did (a hostPort the test
// adds, since the shipped DaemonSet publishes none), arrives from the bridge's
// address after the CNI's hairpin masquerade, as kubenet's does on AKS (the agent's
// NetworkPolicy does not stop it: policy implementations admit the node's own
// addresses). No pod has that address, so nothing may carry a pod's identity.
// deploy/docs/agent.md and the agent's manifests say to use the Service; this shows why.
func TestAgentAssociatesByConnection(t *testing.T) {
	install(t)
	backendIP := podIP(t, backendNS, "app=backend")
	podIP(t, relayNS, "app.kubernetes.io/component=agent")

	svc := startApp(t, "via-service", "http://otelcol-relay-agent."+relayNS+".svc:4318/v1/logs", 100)
	time.Sleep(5 * time.Second)
	recs := appRecords(t, svc, backendIP)
	pod := appPod(t, appNS, "via-service")
	for _, r := range recs {
		for k, want := range map[string]string{"k8s.pod.name": pod, "k8s.deployment.name": "app-via-service", "k8s.namespace.name": appNS, "k8s.node.name": nodeName} {
			if r.Resource[k] != want {
				t.Fatalf("through the agent's Service: record %q has %s=%q, want %q (resource %v)", r.Body, k, r.Resource[k], want, r.Resource)
			}
		}
	}
	t.Logf("through the agent's Service: %d records, each with k8s.pod.name=%s, k8s.deployment.name=app-via-service", len(recs), pod)

	// The seed's way: the node's address. A test-only hostPort on the agent, taken
	// away at the end (an apply of the install would leave a field kubectl patch set).
	mustKubectl(t, "", "-n", relayNS, "patch", "daemonset", "otelcol-relay-agent", "--type=json", "-p",
		`[{"op":"add","path":"/spec/template/spec/containers/0/ports/1/hostPort","value":4318}]`)
	t.Cleanup(func() {
		mustKubectl(t, "", "-n", relayNS, "patch", "daemonset", "otelcol-relay-agent", "--type=json", "-p",
			`[{"op":"remove","path":"/spec/template/spec/containers/0/ports/1/hostPort"}]`)
		mustKubectl(t, "", "-n", relayNS, "rollout", "status", "daemonset/otelcol-relay-agent", "--timeout=5m")
	})
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "daemonset/otelcol-relay-agent", "--timeout=5m")
	node := startApp(t, "via-node-ip", "http://$(HOST_IP):4318/v1/logs", 100)
	time.Sleep(20 * time.Second)
	st := node.status(t)
	nodeIP := strings.TrimSpace(mustKubectl(t, "", "get", "node", nodeName, "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`))
	ct, _ := exec.Command("conntrack", "-L", "-p", "tcp", "--dport", "4318", "--dst", nodeIP).CombinedOutput()
	// Original direction "src=<pod> dst=<node>", reply "src=<agent> dst=<what the agent sees>".
	var seenAs string
	for _, l := range strings.Split(string(ct), "\n") {
		if f := strings.Fields(l); len(f) > 9 {
			var src []string
			for _, x := range f {
				if strings.HasPrefix(x, "src=") || strings.HasPrefix(x, "dst=") {
					src = append(src, x)
				}
			}
			if len(src) == 4 {
				seenAs = fmt.Sprintf("pod %s to node %s, seen by the agent (%s) as from %s",
					strings.TrimPrefix(src[0], "src="), strings.TrimPrefix(src[1], "dst="), strings.TrimPrefix(src[2], "src="), strings.TrimPrefix(src[3], "dst="))
				break
			}
		}
	}
	t.Logf("to the node's IP: %d numbered, %d acknowledged, %d retried; conntrack: %s", st.Assigned, st.Acked, st.Retries, seenAs)
	var withIdentity int
	var got []backendRecord
	if err := getJSON("http://"+backendIP+":8080/logs", &got); err != nil {
		t.Fatal(err)
	}
	var sent int
	for _, r := range got {
		if strings.HasPrefix(r.Body, "app via-node-ip ") {
			sent++
			if r.Resource["k8s.pod.name"] != "" {
				withIdentity++
			}
		}
	}
	if withIdentity != 0 {
		t.Errorf("%d records sent to the node IP carry a pod's identity: the agent associated a masqueraded connection", withIdentity)
	}
	t.Logf("to the node's IP: %d records at the backend, %d of them with a pod's identity", sent, withIdentity)
}

// TestAgentRestartUnderLoad deletes the node's agent pod (gracefully, as a rollout
// or a node drain does) while an application sends to the agent's Service. While no
// agent runs on the node, internalTrafficPolicy: Local leaves the Service without an
// endpoint and the application's sends fail and are retried; what the old agent had
// accepted it forwards before it exits. Every acknowledged number arrives.
func TestAgentRestartUnderLoad(t *testing.T) {
	install(t)
	backendIP := podIP(t, backendNS, "app=backend")
	old := strings.TrimSpace(mustKubectl(t, "", "-n", relayNS, "get", "pods", "-l", "app.kubernetes.io/component=agent", "-o", "jsonpath={.items[0].metadata.name}"))
	app := startApp(t, "agent-restart", "http://otelcol-relay-agent."+relayNS+".svc:4318/v1/logs", 500)
	// The restart must happen while records flow through the agent to the
	// backend. Right after an install (this test alone, or shuffled after a
	// reinstall) the gateway's Service can refuse for a few seconds; the agent
	// holds no records then, so a restart would prove little.
	waitAppAtBackend(t, app, backendIP, 1000)
	start := time.Now()
	mustKubectl(t, "", "-n", relayNS, "delete", "pod", old)
	eventually(t, "a new agent pod Ready", readyBudget, func() string {
		out := mustKubectl(t, "", "-n", relayNS, "get", "pods", "-l", "app.kubernetes.io/component=agent", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] != old && f[1] == "True" {
				return ""
			}
		}
		return out
	})
	t.Logf("agent %s replaced and Ready %s after its deletion", old, time.Since(start).Round(100*time.Millisecond))
	time.Sleep(5 * time.Second)
	recs := appRecords(t, app, backendIP)
	st := app.status(t)
	t.Logf("through the agent's restart: %d numbered, %d acknowledged, %d retried; %d records at the backend",
		st.Assigned, st.Acked, st.Retries, len(recs))
}

// startApp runs an application Deployment app-<run> in appNS that sends numbered
// records "app <run> <n>" as plain OTLP/HTTP to url at rate records/s, naming no pod.
func startApp(t *testing.T, run, url string, rate int) *load {
	t.Helper()
	applyTestNamespace(t, appNS)
	return startAppIn(t, appNS, run, url, rate)
}

// appRecords stops the application and returns the backend's records of its run
// once every number it had acknowledged is there.
func appRecords(t *testing.T, l *load, backendIP string) []backendRecord {
	t.Helper()
	st := l.stop(t, "app")
	var recs []backendRecord
	eventually(t, "app "+l.run+": the backend has every number", readyBudget, func() string {
		got, seen, err := backendAppRecords(backendIP, l.run)
		if err != nil {
			return err.Error()
		}
		recs = got
		if int64(len(seen)) < st.Acked {
			return fmt.Sprintf("%d of %d numbers", len(seen), st.Acked)
		}
		return ""
	})
	return recs
}

// backendAppRecords returns the backend's records of application run, and the
// numbers among them.
func backendAppRecords(backendIP, run string) ([]backendRecord, map[string]bool, error) {
	var got []backendRecord
	if err := getJSON("http://"+backendIP+":8080/logs", &got); err != nil {
		return nil, nil, err
	}
	num := regexp.MustCompile(`^app ` + run + ` (\d+)$`)
	var recs []backendRecord
	seen := map[string]bool{}
	for _, r := range got {
		if m := num.FindStringSubmatch(r.Body); m != nil {
			recs = append(recs, r)
			seen[m[1]] = true
		}
	}
	return recs, seen, nil
}

// appPod is the name of the pod of application run, in namespace ns.
func appPod(t *testing.T, ns, run string) string {
	t.Helper()
	return strings.TrimSpace(mustKubectl(t, "", "-n", ns, "get", "pods", "-l", "app=app-"+run, "-o", "jsonpath={.items[0].metadata.name}"))
}

// requirePodIdentity fails the test at the first record whose resource does not
// name pod in namespace ns, as k8s_attributes resolves it; where says through what.
func requirePodIdentity(t *testing.T, where string, recs []backendRecord, pod, ns string) {
	t.Helper()
	for _, r := range recs {
		if r.Resource["k8s.pod.name"] != pod || r.Resource["k8s.namespace.name"] != ns {
			t.Fatalf("%s: record %q has resource %v, want k8s.pod.name=%s in %s", where, r.Body, r.Resource, pod, ns)
		}
	}
}

// waitAppAtBackend waits until the backend has n records of l's run.
func waitAppAtBackend(t *testing.T, l *load, backendIP string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("app %s: %d records at the backend", l.run, n), readyBudget, func() string {
		recs, _, err := backendAppRecords(backendIP, l.run)
		if err != nil {
			return err.Error()
		}
		if len(recs) < n {
			return fmt.Sprintf("%d records", len(recs))
		}
		return ""
	})
}

// applyTestNamespace makes namespace ns, labelled as the backend's NetworkPolicy
// admits, for whichever test runs first: applied, not created, so any order works.
// A test before may have deleted ns without waiting: what is applied into a
// namespace still terminating goes with it, so it waits for that to end first.
func applyTestNamespace(t *testing.T, ns string) {
	t.Helper()
	eventually(t, "namespace "+ns+" not terminating", readyBudget, func() string {
		out, err := kubectl(t, "", "get", "namespace", ns, "--ignore-not-found", "-o", "jsonpath={.status.phase}")
		if err != nil {
			return err.Error()
		}
		if phase := strings.TrimSpace(out); phase == "Terminating" {
			return phase
		}
		return ""
	})
	mustKubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+", labels: {otelcol-relay-cluster-test: \"true\"}}\n",
		"apply", "--server-side", "-f", "-")
}
