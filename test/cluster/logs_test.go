// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

const (
	appNS     = "otelcol-relay-apps"
	loggingNS = "logging"
	lineCount = 3000
)

type backendRecord struct {
	Body     string            `json:"body"`
	Resource map[string]string `json:"resource"`
	Attrs    map[string]string `json:"attrs"`
}

type senderStatus struct{ Read, Acked, Requests, Retries, Dropped int }

func getJSON(url string, v any) error {
	b, err := e2e.Get(url, 10*time.Second)
	if err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(b, v)
}

// TestLogsEndToEnd: a Deployment writes numbered lines to stdout; the kubelet writes
// them to /var/log/containers; a sender pod (labelled as fluent-bit, with the host's
// /var/log and the client-certificate Secret fluent-bit mounts) posts them as
// fluent-bit's opentelemetry output does to the relay's Service by its DNS name; the
// backend, in its own namespace behind the relay's NetworkPolicy egress, must get
// every line exactly once, its resource enriched by k8s_attributes from the API
// with the Deployment's and the node's names.
func TestLogsEndToEnd(t *testing.T) {
	install(t)
	// The install (deploy/README.md's commands) made namespace logging and what
	// fluent-bit's DaemonSet mounts there: ConfigMap otelcol-relay-ca and Secret
	// otelcol-relay-fluent-bit-tls. The sender mounts the same.
	mustKubectl(t, "", "label", "--overwrite", "namespace", loggingNS, "otelcol-relay-cluster-test=true")
	logsEndToEnd(t, appNS, loggingNS, podIP(t, backendNS, "app=backend"), lineCount)
}

// logsEndToEnd is TestLogsEndToEnd's path: Deployment lines in namespace apps
// writes that many numbered lines, sender pod log-sender in senderNS (which holds what fluent-bit
// mounts: ConfigMap otelcol-relay-ca, Secret otelcol-relay-fluent-bit-tls) posts
// them to the relay, with env's NAME=value variables (RELAY_HOST: fluent-bit's
// OTELCOL_RELAY_HOST), and the backend at backendIP must get every line exactly
// once, its resource enriched by k8s_attributes.
func logsEndToEnd(t *testing.T, apps, senderNS, backendIP string, lines int, env ...string) {
	t.Helper()
	applyTestNamespace(t, apps)
	mustKubectl(t, toolDeployment("lines", apps, "lines", fmt.Sprintf(`
        env: [{name: LINES, value: "%d"}, {name: LINES_PER_SECOND, value: "300"}]`, lines)),
		"apply", "--server-side", "-f", "-")
	podIP(t, apps, "app=lines")
	mustKubectl(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: log-sender
  namespace: %s
  labels: {app.kubernetes.io/name: fluent-bit, otelcol-relay-test: log-sender}
spec:
  containers:
  - name: send
    image: localhost/otelcol-relay-test/clustertool:1.0
    imagePullPolicy: Never
    args: [send]
    env:
    - {name: TAIL_PATH, value: "/var/log/containers/lines-*_%s_lines-*.log"}%s
    ports: [{containerPort: 2020}]
    volumeMounts:
    - {name: varlog, mountPath: /var/log, readOnly: true}
    - {name: tls, mountPath: /fluent-bit/tls, readOnly: true}
  volumes:
  - name: varlog
    hostPath: {path: /var/log}
  - name: tls
    projected:
      sources:
      - configMap: {name: otelcol-relay-ca, items: [{key: ca.crt, path: ca.crt}]}
      - secret: {name: otelcol-relay-fluent-bit-tls, items: [{key: tls.crt, path: tls.crt}, {key: tls.key, path: tls.key}]}
`, senderNS, apps, podEnv(env)), "apply", "--server-side", "-f", "-")
	// Not by the fluent-bit label alone: a load pod of an earlier test may still be
	// terminating with it.
	senderIP := podIP(t, senderNS, "otelcol-relay-test=log-sender")
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "-n", senderNS, "delete", "pod", "log-sender", "--wait=false")
		_, _ = kubectl(t, "", "-n", apps, "delete", "deployment", "lines", "--wait=false")
	})

	start := time.Now()
	var st senderStatus
	eventually(t, "the sender has every line acknowledged", readyBudget, func() string {
		if err := getJSON("http://"+senderIP+":2020/status", &st); err != nil {
			return err.Error()
		}
		if st.Acked < lines {
			return fmt.Sprintf("%+v", st)
		}
		return ""
	})
	t.Logf("sender: %+v", st)
	if st.Dropped != 0 {
		t.Errorf("the relay refused %d records for good", st.Dropped)
	}

	line := regexp.MustCompile(`^line (\d+) of \d+$`)
	var recs []backendRecord
	seen := map[int]int{}
	eventually(t, "the backend has every line", readyBudget, func() string {
		recs = nil
		if err := getJSON("http://"+backendIP+":8080/logs", &recs); err != nil {
			return err.Error()
		}
		clear(seen)
		for _, r := range recs {
			if m := line.FindStringSubmatch(r.Body); m != nil && r.Resource["k8s.namespace.name"] == apps {
				n, _ := strconv.Atoi(m[1])
				seen[n]++
			}
		}
		if len(seen) < lines {
			return fmt.Sprintf("%d of %d lines", len(seen), lines)
		}
		return ""
	})
	missing, dup := 0, 0
	for i := 1; i <= lines; i++ {
		switch c := seen[i]; {
		case c == 0:
			missing++
		case c > 1:
			dup += c - 1
		}
	}
	t.Logf("sent %d lines, %d records at the backend from %s, %d missing, %d duplicates, %s after the sender's start",
		lines, len(recs), apps, missing, dup, time.Since(start).Round(time.Second))
	if missing != 0 || dup != 0 {
		t.Errorf("%d lines missing, %d duplicated at the backend", missing, dup)
	}
	podName := mustKubectl(t, "", "-n", apps, "get", "pods", "-l", "app=lines", "-o", "jsonpath={.items[0].metadata.name}")
	checked := 0
	for _, r := range recs {
		if !line.MatchString(r.Body) || r.Resource["k8s.namespace.name"] != apps {
			continue
		}
		checked++
		for k, want := range map[string]string{
			"k8s.deployment.name": "lines",
			"k8s.node.name":       nodeName,
			"k8s.pod.name":        podName,
			"k8s.container.name":  "lines",
		} {
			if got := r.Resource[k]; got != want {
				t.Fatalf("record %q: resource %s = %q, want %q (resource %v, attributes %v)", r.Body, k, got, want, r.Resource, r.Attrs)
			}
		}
		if r.Resource["k8s.pod.uid"] == "" {
			t.Fatalf("record %q: no k8s.pod.uid on the resource: %v", r.Body, r.Resource)
		}
	}
	t.Logf("%d records carry k8s.deployment.name=lines and k8s.node.name=%s", checked, nodeName)
}
