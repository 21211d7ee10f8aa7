// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension"
)

// loadStatus is clustertool load's /status.
type loadStatus struct {
	Run                                                  string
	Assigned, Acked, Requests, Retries, Dropped, Pending int64
	Rate                                                 int64
	Stopped                                              bool
}

// seqCount is the backend's /seq: what arrived of one run's numbers.
type seqCount struct {
	Upto, Distinct, Missing, Duplicates, Beyond int
	FirstMissing                                []int
}

// load is one numbered sender pod (clustertool load) in the logging namespace,
// labelled and mounted as fluent-bit is, so the relay's NetworkPolicy and mutual TLS
// take it as fluent-bit.
type load struct {
	run string
	ip  string
}

// startLoad runs sender pod load-<run> at rate records/s from workers connections.
func startLoad(t *testing.T, run string, rate, workers int) *load {
	t.Helper()
	return startLoadIn(t, loggingNS, "app.kubernetes.io/name: fluent-bit", run, rate, workers)
}

// podEnv is env's NAME=value variables as entries of a tool pod's container env
// list, each on a line of its own (the list's indent: 4).
func podEnv(env []string) string {
	var out strings.Builder
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&out, "\n    - {name: %s, value: %q}", k, v)
	}
	return out.String()
}

// startLoadIn is startLoad from a pod in namespace ns with the labels given (YAML
// flow-map entries), which must hold ConfigMap otelcol-relay-ca and Secret
// otelcol-relay-fluent-bit-tls as logging does. env adds NAME=value variables
// (RELAY_HOST, RELAY_TLS_NAME: fluent-bit's OTELCOL_RELAY_HOST and _TLS_NAME).
func startLoadIn(t *testing.T, ns, labels, run string, rate, workers int, env ...string) *load {
	t.Helper()
	name := "load-" + run
	mustKubectl(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  namespace: %[2]s
  labels: {%[6]s, otelcol-relay-load: "%[3]s"}
spec:
  containers:
  - name: load
    image: localhost/otelcol-relay-test/clustertool:1.0
    imagePullPolicy: Never
    args: [load]
    env:
    - {name: RUN, value: "%[3]s"}
    - {name: RATE, value: "%[4]d"}
    - {name: WORKERS, value: "%[5]d"}
    # Records the size of the bench's fluent-bit ones (~1.1 KB), so figures compare.
    - {name: PAD, value: "1000"}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}%[7]s
    ports: [{containerPort: 2020}]
    readinessProbe: {tcpSocket: {port: 2020}, periodSeconds: 2}
    volumeMounts: [{name: tls, mountPath: /fluent-bit/tls, readOnly: true}]
  volumes:
  - name: tls
    projected:
      sources:
      - configMap: {name: otelcol-relay-ca, items: [{key: ca.crt, path: ca.crt}]}
      - secret: {name: otelcol-relay-fluent-bit-tls, items: [{key: tls.crt, path: tls.crt}, {key: tls.key, path: tls.key}]}
`, name, ns, run, rate, workers, labels, podEnv(env)), "apply", "--server-side", "-f", "-")
	l := &load{run: run, ip: podIP(t, ns, "otelcol-relay-load="+run)}
	t.Cleanup(func() { _, _ = kubectl(t, "", "-n", ns, "delete", "pod", name, "--wait=false") })
	return l
}

func (l *load) status(t *testing.T) loadStatus {
	t.Helper()
	var st loadStatus
	if err := getJSON("http://"+l.ip+":2020/status", &st); err != nil {
		t.Fatalf("load %s: %v", l.run, err)
	}
	return st
}

func (l *load) setRate(t *testing.T, perSecond int) {
	t.Helper()
	if err := getJSON(fmt.Sprintf("http://%s:2020/rate?per_second=%d", l.ip, perSecond), nil); err != nil {
		t.Fatal(err)
	}
}

// finish stops the sender, waits until every chunk it handed out is acknowledged
// (it retries without limit) and the backend has every number, and returns both
// counts. A number the sender had acknowledged and the backend never got is lost.
func (l *load) finish(t *testing.T, backendIP string) (loadStatus, seqCount) {
	t.Helper()
	st := l.stop(t, "load")
	var sc seqCount
	var stable int
	eventually(t, "load "+l.run+": the backend has every number", readyBudget, func() string {
		if err := getJSON(fmt.Sprintf("http://%s:8080/seq?run=%s&upto=%d", backendIP, l.run, st.Assigned), &sc); err != nil {
			return err.Error()
		}
		if sc.Missing != 0 {
			stable = 0
			return fmt.Sprintf("%+v", sc)
		}
		// Duplicates may still be arriving from queues being retried: settle.
		stable++
		if stable < 3 {
			return "settling"
		}
		return ""
	})
	t.Logf("load %s: %d numbered, %d acknowledged, %d dropped, %d requests (%d retried); backend: %d distinct, %d missing, %d duplicates",
		l.run, st.Assigned, st.Acked, st.Dropped, st.Requests, st.Retries, sc.Distinct, sc.Missing, sc.Duplicates)
	if st.Dropped != 0 {
		t.Errorf("load %s: the relay refused %d records for good", l.run, st.Dropped)
	}
	return st, sc
}

// stop stops the sender and waits until every chunk it handed out is acknowledged
// (it retries without limit) and at least one was.
func (l *load) stop(t *testing.T, role string) loadStatus {
	t.Helper()
	if err := getJSON("http://"+l.ip+":2020/stop", nil); err != nil {
		t.Fatal(err)
	}
	var st loadStatus
	eventually(t, role+" "+l.run+": every chunk acknowledged", readyBudget, func() string {
		if st = l.status(t); st.Pending != 0 || st.Acked == 0 {
			return fmt.Sprintf("%+v", st)
		}
		return ""
	})
	return st
}

// relayPod is one relay pod of the StatefulSet as the API has it now.
type relayPod struct {
	name, ip, uid string
	ready         bool
}

func relayPods(t *testing.T) map[string]relayPod {
	t.Helper()
	return relayPodsIn(t, relayNS)
}

// relayPodsIn is relayPods of the install in namespace ns.
func relayPodsIn(t *testing.T, ns string) map[string]relayPod {
	t.Helper()
	out := mustKubectl(t, "", "-n", ns, "get", "pods", "-l", "app.kubernetes.io/component=gateway", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.status.podIP} {.status.conditions[?(@.type=="Ready")].status} {.metadata.deletionTimestamp}{"\n"}{end}`)
	pods := map[string]relayPod{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		pods[f[0]] = relayPod{name: f[0], uid: f[1], ip: f[2], ready: f[3] == "True" && len(f) == 4}
	}
	return pods
}

// waitRelays waits until exactly n relay pods exist, each Ready, and returns them.
func waitRelays(t *testing.T, n int) map[string]relayPod {
	t.Helper()
	return waitRelaysIn(t, relayNS, n)
}

// waitRelaysIn is waitRelays for the install in namespace ns.
func waitRelaysIn(t *testing.T, ns string, n int) map[string]relayPod {
	t.Helper()
	var pods map[string]relayPod
	done := false
	defer func() {
		if !done {
			logRelayPodsIn(t, ns)
		}
	}()
	eventually(t, fmt.Sprintf("%d relay pods Ready", n), readyBudget, func() string {
		pods = relayPodsIn(t, ns)
		ready := 0
		for _, p := range pods {
			if p.ready {
				ready++
			}
		}
		if len(pods) != n || ready != n {
			return fmt.Sprintf("%d pods, %d Ready", len(pods), ready)
		}
		return ""
	})
	done = true
	return pods
}

// logRelayPodsIn logs what a relay pod of the install in namespace ns that is
// not Ready says: its events and the end of its log (and of its previous
// container's, after a crash).
func logRelayPodsIn(t *testing.T, ns string) {
	t.Helper()
	for name := range relayPodsIn(t, ns) {
		out, _ := kubectl(t, "", "-n", ns, "describe", "pod", name)
		t.Logf("kubectl describe pod %s:\n%s", name, tail(out, 25))
		for _, prev := range []string{"--previous=false", "--previous=true"} {
			if out, err := kubectl(t, "", "-n", ns, "logs", name, "-c", "otelcol-relay", "--tail=15", prev); err == nil && out != "" {
				t.Logf("kubectl logs %s %s:\n%s", name, prev, out)
			}
		}
	}
}

// selfMetric sums every series of the named metric (with or without the _total a
// counter gets) on a relay's own metrics endpoint, of those with each label given
// (as `key="value"`).
func selfMetric(ip, name string, labels ...string) (float64, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + ip + ":8888/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("%s:8888/metrics: HTTP %d: %s", ip, resp.StatusCode, b)
	}
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		for _, n := range []string{name, name + "_total"} {
			if strings.HasPrefix(l, n+"{") || strings.HasPrefix(l, n+" ") {
				if !hasAll(l, labels) {
					continue
				}
				f := strings.Fields(l)
				v, err := strconv.ParseFloat(f[len(f)-1], 64)
				if err == nil {
					sum += v
				}
			}
		}
	}
	return sum, sc.Err()
}

func hasAll(line string, labels []string) bool {
	for _, l := range labels {
		if !strings.Contains(line, l) {
			return false
		}
	}
	return true
}

// accepted is each Ready relay's otelcol_receiver_accepted_log_records now.
func accepted(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for n, p := range relayPods(t) {
		if !p.ready {
			continue
		}
		if v, err := selfMetric(p.ip, "otelcol_receiver_accepted_log_records"); err == nil {
			out[n] = v
		}
	}
	return out
}

// shares is each pod's part of what all of them accepted between two readings.
func shares(before, after map[string]float64) string {
	var total float64
	d := map[string]float64{}
	for n, v := range after {
		d[n] = v - before[n]
		total += d[n]
	}
	names := make([]string, 0, len(d))
	for n := range d {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		if total > 0 {
			fmt.Fprintf(&b, "%s %.0f%% ", n, 100*d[n]/total)
		}
	}
	return fmt.Sprintf("%s(%.0f records)", b.String(), total)
}

// pvcDir is where the local-path provisioner keeps a PVC's volume on this node.
func pvcDir(t *testing.T, pvc string) string {
	t.Helper()
	pv := strings.TrimSpace(mustKubectl(t, "", "-n", relayNS, "get", "pvc", pvc, "-o", "jsonpath={.spec.volumeName}"))
	if pv == "" {
		t.Fatalf("PVC %s has no volume", pvc)
	}
	return strings.TrimSpace(mustKubectl(t, "", "get", "pv", pv, "-o", "jsonpath={.spec.hostPath.path}{.spec.local.path}"))
}

// queuedOnVolume is how many queue items queue_storage's segments on a PVC's volume
// still hold (the pod that wrote them has stopped), per client directory.
func queuedOnVolume(t *testing.T, pvc string) (int, map[string]int) {
	t.Helper()
	per := map[string]int{}
	total := 0
	root := pvcDir(t, pvc)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if segs, _ := filepath.Glob(filepath.Join(p, "*.seg")); len(segs) == 0 {
			return nil
		}
		live, err := queuestorageextension.Inspect(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for k := range live {
			if _, err := strconv.ParseUint(k, 10, 64); err == nil {
				per[filepath.Base(p)]++
				total++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the queue on %s (%s): %v", pvc, root, err)
	}
	return total, per
}
