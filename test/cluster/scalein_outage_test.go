// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// drainTimeout is the relays' drain timeout while a test keeps the backend down.
const drainTimeout = "RELAY_DRAIN_TIMEOUT=30s"

// TestScaleInBackendDown removes a replica while the backend is unreachable for the
// whole drain. The drain gives up at its timeout, the pod exits within the grace
// period, and what it held stays on its retained volume (counted here); the shipped
// alert OtelcolRelayDataLeftOnVolume, evaluated by a real Prometheus that scrapes
// the relay pods (Debian's), becomes active on the real otelcol_admission_drain_queue_size; and once
// the backend is back and the ordinal runs again on that volume, everything is
// delivered and the alert clears. The drain's timeout is 30 s (drainTimeout), not the
// shipped 100, so that the test waits 30 s for a drain that cannot finish.
func TestScaleInBackendDown(t *testing.T) {
	install(t)
	relayEnv(t, drainTimeout)
	scaleToTwo(t)
	backendIP := podIP(t, backendNS, "app=backend")
	prom := startPrometheus(t)
	t.Cleanup(func() {
		_ = getJSON("http://"+backendIP+":8080/down?on=false", nil)
		scaleToTwo(t)
	})

	setHPA(t, 3, 10) // below minReplicas the HPA scales up at once
	waitRelays(t, 3)
	if err := getJSON("http://"+backendIP+":8080/down?on=true", nil); err != nil {
		t.Fatal(err)
	}
	l := startLoad(t, "outage", 1000, 3)
	eventually(t, "otelcol-relay-2 queues records", readyBudget, func() string {
		v, err := selfMetric(relayPods(t)["otelcol-relay-2"].ip, "otelcol_exporter_queue_size")
		if err != nil || v < 10 {
			return fmt.Sprintf("queue size %v (%v)", v, err)
		}
		return ""
	})
	l.setRate(t, 0)

	end := watchEnd(t, "otelcol-relay-2")
	start := time.Now()
	setHPA(t, 2, 2)
	waitRelays(t, 2)
	t.Logf("otelcol-relay-2 removed %s after the scale-in, backend down", time.Since(start).Round(time.Second))
	end.wait()
	end.mu.Lock()
	defer end.mu.Unlock()
	log := end.log.String()
	if !strings.Contains(log, "Drain gave up") {
		t.Errorf("otelcol-relay-2: no drain that gave up in its log:\n%s", tail(log, 20))
	}
	// Not end.check, which wants a completed drain: here the exit and its time count.
	if end.exitCode != "0" {
		t.Errorf("otelcol-relay-2 exited with %q (%s), want 0", end.exitCode, end.reason)
	}
	if d := end.exitedAt.Sub(end.deletedAt); d > 120*time.Second {
		t.Errorf("otelcol-relay-2 took %s from deletion to exit, beyond its grace period", d)
	}
	left, per := queuedOnVolume(t, "queue-otelcol-relay-2")
	t.Logf("left on the retained volume queue-otelcol-relay-2: %d queue items %v", left, per)
	if left == 0 {
		t.Errorf("nothing left on the volume with the backend down: the test did not test a stranded queue")
	}
	eventually(t, "OtelcolRelayDataLeftOnVolume active for otelcol-relay-2", 2*time.Minute, func() string {
		return prom.alert(t, "OtelcolRelayDataLeftOnVolume", "otelcol-relay-2")
	})

	if err := getJSON("http://"+backendIP+":8080/down?on=false", nil); err != nil {
		t.Fatal(err)
	}
	setHPA(t, 3, 10)
	waitRelays(t, 3)
	_, sc := l.finish(t, backendIP)
	if sc.Missing != 0 {
		t.Errorf("%d acknowledged records never reached the backend (first: %v)", sc.Missing, sc.FirstMissing)
	}
	queuesEmpty(t)
	eventually(t, "OtelcolRelayDataLeftOnVolume clears once otelcol-relay-2 runs again", 2*time.Minute, func() string {
		if why := prom.alert(t, "OtelcolRelayDataLeftOnVolume", "otelcol-relay-2"); why == "" {
			return "still active"
		}
		return ""
	})
}

type prometheus struct{ url string }

// startPrometheus runs Debian's Prometheus on the host with the shipped alert rules,
// scraping every relay pod's metrics port, labelled namespace and pod as the shipped
// ServiceMonitor labels them, with job otelcol-relay.
func startPrometheus(t *testing.T) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus (Debian's, hack/test-deps.sh) is not on PATH: %v", err)
	}
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "components", "alerts", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []json.RawMessage `json:"groups"`
		} `json:"spec"`
	}
	if uerr := yaml.Unmarshal(b, &rule); uerr != nil {
		t.Fatal(uerr)
	}
	rules, err := json.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "rules.yaml"), rules)
	// Debian's Prometheus is built without kubernetes_sd: the test finds the relay
	// pods through the API, as that discovery would, and writes them as file_sd
	// targets (terminating pods too: the drain's gauge is served while it runs).
	writeFile(t, filepath.Join(dir, "prometheus.yaml"), []byte(`global: {scrape_interval: 2s, evaluation_interval: 2s}
rule_files: [rules.yaml]
scrape_configs:
- job_name: otelcol-relay
  file_sd_configs: [{files: [targets.json]}]
`))
	targets := func() {
		out, kerr := kubectl(t, "", "-n", relayNS, "get", "pods", "-l", "app.kubernetes.io/component=gateway", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.status.podIP}{"\n"}{end}`)
		if kerr != nil {
			return
		}
		var tg []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(l); len(f) == 2 {
				tg = append(tg, map[string]any{"targets": []string{f[1] + ":8888"}, "labels": map[string]string{"namespace": relayNS, "pod": f[0]}})
			}
		}
		b, _ := json.Marshal(tg)
		tmp := filepath.Join(dir, "targets.json.tmp")
		if os.WriteFile(tmp, b, 0o600) == nil {
			_ = os.Rename(tmp, filepath.Join(dir, "targets.json"))
		}
	}
	targets()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yaml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	out, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		for tick := time.NewTicker(2 * time.Second); ; {
			select {
			case <-ctx.Done():
				tick.Stop()
				return
			case <-tick.C:
				targets()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		out.Close()
		if t.Failed() {
			b, _ := os.ReadFile(out.Name())
			t.Logf("prometheus log:\n%s", tail(string(b), 30))
		}
	})
	p := &prometheus{url: "http://" + addr}
	eventually(t, "Prometheus scrapes the relay pods", time.Minute, func() string {
		var r struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		if err := getJSON(p.url+"/api/v1/query?query="+url.QueryEscape(`up{job="otelcol-relay"} == 1`), &r); err != nil {
			return err.Error()
		}
		if len(r.Data.Result) < 2 {
			return fmt.Sprintf("%d relay targets up", len(r.Data.Result))
		}
		return ""
	})
	return p
}

// alert is "" when alert name is pending or firing for pod, else why not.
func (p *prometheus) alert(t *testing.T, name, pod string) string {
	t.Helper()
	var r struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := getJSON(p.url+"/api/v1/alerts", &r); err != nil {
		return err.Error()
	}
	var active []string
	for _, a := range r.Data.Alerts {
		active = append(active, a.Labels["alertname"]+"/"+a.Labels["pod"]+"="+a.State)
		if a.Labels["alertname"] == name && a.Labels["pod"] == pod {
			t.Logf("%s for %s: %s", name, pod, a.State)
			return ""
		}
	}
	return fmt.Sprintf("active alerts: %v", active)
}
