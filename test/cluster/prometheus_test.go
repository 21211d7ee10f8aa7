// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

type prometheus struct{ url string }

// startPrometheus runs Debian's Prometheus on the host with the shipped alert rules,
// scraping what the shipped monitors (deploy/components/servicemonitor) make of the
// running install: the relay through its Service, federation and the agents as pods,
// each labelled as prometheus-operator labels it (job from the monitor's
// relabelings, namespace, pod, container, endpoint, node). Debian's Prometheus is
// built without kubernetes_sd, so the test finds the targets through the API, as that
// discovery would, and writes them as file_sd targets every 2 s; terminating pods
// stay targets while they have an address (a drain's gauge is served while it runs).
func startPrometheus(t *testing.T) *prometheus {
	t.Helper()
	return startPrometheusFor(t, 0)
}

// startPrometheusFor is startPrometheus with every rule's `for` cut to at most
// forAtMost (0 keeps them), for a test that waits for alerts to fire rather than
// to be pending.
func startPrometheusFor(t *testing.T, forAtMost time.Duration) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus (Debian's, hack/test-deps.sh) is not on PATH: %v", err)
	}
	if installOverlay == "" {
		t.Fatal("startPrometheus needs the install: install(t) first")
	}
	monitors := shippedMonitors(t)
	checkMonitors(t, monitors)
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "components", "alerts", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Name  string           `json:"name"`
				Rules []map[string]any `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if uerr := yaml.Unmarshal(b, &rule); uerr != nil {
		t.Fatal(uerr)
	}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			f, ok := r["for"].(string)
			if !ok || forAtMost == 0 {
				continue
			}
			d, perr := model.ParseDuration(f)
			if perr != nil {
				t.Fatalf("rule %v: for %q: %v", r["alert"], f, perr)
			}
			if time.Duration(d) > forAtMost {
				r["for"] = model.Duration(forAtMost).String()
			}
		}
	}
	rules, err := json.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "rules.yaml"), rules)
	// __job carries each target's job: Prometheus would otherwise label every
	// target of this one scrape config with its job_name.
	writeFile(t, filepath.Join(dir, "prometheus.yaml"), []byte(`global: {scrape_interval: 2s, evaluation_interval: 2s}
rule_files: [rules.yaml]
scrape_configs:
- job_name: monitors
  file_sd_configs: [{files: [targets.json]}]
  relabel_configs:
  - {source_labels: [__job], target_label: job}
`))
	// Written by the goroutine below every 2 s, read by the wait at the end.
	var count atomic.Int64
	targets := func() {
		tg := monitorTargets(t, monitors)
		count.Store(int64(len(tg)))
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
	eventually(t, "Prometheus scrapes every target the monitors make", time.Minute, func() string {
		up, n := p.query(t, `up == 1`), int(count.Load())
		if len(up) < n || n < 2 {
			return fmt.Sprintf("%d of %d targets up: %v", len(up), n, up)
		}
		return ""
	})
	return p
}

// shippedMonitors are the monitors deploy/components/servicemonitor adds to the
// running install, rendered over it as a user's kustomization would.
func shippedMonitors(t *testing.T) []manifest.Monitor {
	t.Helper()
	out := manifest.Monitors(t, manifest.OverlayOf(t, []string{installOverlay}, filepath.Join(repoRoot, "deploy", "components", "servicemonitor")))
	if len(out) == 0 {
		t.Fatal("components/servicemonitor renders no monitor")
	}
	return out
}

// checkMonitors fails the test on what monitorTargets could not turn into targets
// as prometheus-operator does: a selector that does not parse, a relabeling other
// than replace or with a regex that does not compile. It runs once, on the test's
// goroutine; monitorTargets runs every 2 s on another, where a test may not fail.
func checkMonitors(t *testing.T, monitors []manifest.Monitor) {
	t.Helper()
	for _, m := range monitors {
		if _, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector); err != nil {
			t.Fatalf("%s %s: %v", m.Kind, m.Metadata.Name, err)
		}
		for _, ep := range slices.Concat(m.Spec.Endpoints, m.Spec.PodEPs) {
			for _, r := range ep.Relabelings {
				if r.Action != "" && !strings.EqualFold(r.Action, "replace") {
					t.Fatalf("%s %s: relabeling %+v: only replace is implemented here", m.Kind, m.Metadata.Name, r)
				}
				if _, err := regexp.Compile(relabelRegex(r)); err != nil {
					t.Fatalf("%s %s: relabeling %+v: %v", m.Kind, m.Metadata.Name, r, err)
				}
			}
		}
	}
}

// fileSDTarget is one entry of a Prometheus file_sd file.
type fileSDTarget struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// monitorTargets lists, as prometheus-operator's configuration would discover them,
// the targets each monitor makes of the pods running now (checkMonitors vetted the
// monitors). A namespace whose objects cannot be listed yields none this time.
func monitorTargets(t *testing.T, monitors []manifest.Monitor) []fileSDTarget {
	t.Helper()
	type objects struct {
		pods corev1.PodList
		svcs corev1.ServiceList
		err  error
	}
	listed := map[string]*objects{}
	var out []fileSDTarget
	for _, m := range monitors {
		ns := m.Metadata.Namespace
		o := listed[ns]
		if o == nil {
			o = &objects{}
			if o.err = kubectlJSON(t, &o.pods, "-n", ns, "get", "pods"); o.err == nil {
				o.err = kubectlJSON(t, &o.svcs, "-n", ns, "get", "services")
			}
			listed[ns] = o
		}
		if o.err != nil {
			continue
		}
		sel, _ := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
		for _, pod := range o.pods.Items {
			if pod.Status.PodIP == "" {
				continue
			}
			switch m.Kind {
			case "PodMonitor":
				if !sel.Matches(labels.Set(pod.Labels)) {
					continue
				}
				for _, ep := range m.Spec.PodEPs {
					job := m.Metadata.Namespace + "/" + m.Metadata.Name // the operator's default
					if m.Spec.JobLabel != "" {
						job = pod.Labels[m.Spec.JobLabel]
					}
					if tg, ok := podTarget(pod, ep, ep.Port, job, nil); ok {
						out = append(out, tg)
					}
				}
			case "ServiceMonitor":
				for _, svc := range o.svcs.Items {
					if !sel.Matches(labels.Set(svc.Labels)) || len(svc.Spec.Selector) == 0 ||
						!labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
						continue
					}
					for _, ep := range m.Spec.Endpoints {
						for _, sp := range svc.Spec.Ports {
							if sp.Name != ep.Port {
								continue
							}
							port := sp.TargetPort.StrVal
							if port == "" {
								port = strconv.Itoa(int(sp.TargetPort.IntVal))
							}
							job := svc.Name // the operator's default
							if m.Spec.JobLabel != "" {
								job = svc.Labels[m.Spec.JobLabel]
							}
							if tg, ok := podTarget(pod, ep, port, job, map[string]string{"service": svc.Name}); ok {
								out = append(out, tg)
							}
						}
					}
				}
			}
		}
	}
	return out
}

// podTarget is pod's target on port (a container port's name or number), labelled
// as the operator does, then by the endpoint's relabelings.
func podTarget(pod corev1.Pod, ep manifest.MonitorEndpoint, port, job string, extra map[string]string) (fileSDTarget, bool) {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name != port && strconv.Itoa(int(p.ContainerPort)) != port {
				continue
			}
			lbls := map[string]string{
				"job": job, "namespace": pod.Namespace, "pod": pod.Name, "container": c.Name, "endpoint": ep.Port,
				"__meta_kubernetes_pod_node_name": pod.Spec.NodeName,
				"__meta_kubernetes_pod_name":      pod.Name,
				"__meta_kubernetes_namespace":     pod.Namespace,
			}
			for k, v := range extra {
				lbls[k] = v
			}
			for _, r := range ep.Relabelings {
				relabel(r, lbls)
			}
			tg := fileSDTarget{Targets: []string{fmt.Sprintf("%s:%d", pod.Status.PodIP, p.ContainerPort)}, Labels: map[string]string{}}
			for k, v := range lbls {
				if !strings.HasPrefix(k, "__meta_") {
					tg.Labels[k] = v
				}
			}
			tg.Labels["__job"] = tg.Labels["job"]
			delete(tg.Labels, "job")
			if ep.Path != "" {
				tg.Labels["__metrics_path__"] = ep.Path
			}
			return tg, true
		}
	}
	return fileSDTarget{}, false
}

// relabel applies one replace relabeling, as Prometheus does; the monitors ship no
// other action (checkMonitors).
func relabel(r manifest.Relabeling, lbls map[string]string) {
	sep, repl := ";", "$1"
	if r.Separator != nil {
		sep = *r.Separator
	}
	if r.Replacement != nil {
		repl = *r.Replacement
	}
	var vals []string
	for _, s := range r.SourceLabels {
		vals = append(vals, lbls[s])
	}
	re := regexp.MustCompile(relabelRegex(r))
	src := strings.Join(vals, sep)
	m := re.FindStringSubmatchIndex(src)
	if m == nil {
		return
	}
	if v := string(re.ExpandString(nil, repl, src, m)); v != "" {
		lbls[r.TargetLabel] = v
	} else {
		delete(lbls, r.TargetLabel)
	}
}

// relabelRegex is r's regex anchored, as Prometheus matches it ((.*) by default).
func relabelRegex(r manifest.Relabeling) string {
	if r.Regex == "" {
		return "^(?:(.*))$"
	}
	return "^(?:" + r.Regex + ")$"
}

// kubectlJSON decodes `kubectl ARGS -o json` into v.
func kubectlJSON(t *testing.T, v any, args ...string) error {
	t.Helper()
	out, err := kubectl(t, "", append(args, "-o", "json")...)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(out), v)
}

// query returns the series of an instant query, each as its labels.
func (p *prometheus) query(t *testing.T, q string) []map[string]string {
	t.Helper()
	res, err := p.api().Query(context.Background(), q)
	if err != nil {
		return nil
	}
	var out []map[string]string
	for _, s := range res {
		out = append(out, s.Labels)
	}
	return out
}

// api is the HTTP API client internal/e2e's Prometheus tests use.
func (p *prometheus) api() *e2e.Prometheus {
	return &e2e.Prometheus{URL: p.url, Client: &http.Client{Timeout: 30 * time.Second}}
}

// value is the first sample of an instant query, and whether there was one.
func (p *prometheus) value(t *testing.T, q string) (float64, bool) {
	t.Helper()
	res, err := p.api().Query(context.Background(), q)
	if err != nil || len(res) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(res[0].Value, 64)
	return v, err == nil
}

// series runs an instant query and returns each series it answers as its labels
// and value, or the error Prometheus gave.
func (p *prometheus) series(q string) ([]string, error) {
	res, err := p.api().Query(context.Background(), q)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range res {
		var lbls []string
		for k, v := range s.Labels {
			lbls = append(lbls, k+"="+v)
		}
		slices.Sort(lbls)
		out = append(out, fmt.Sprintf("{%s} %s", strings.Join(lbls, ","), s.Value))
	}
	return out, nil
}

// promAlert is one alert of Prometheus's /api/v1/alerts.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// alerts is every alert pending or firing (/api/v1/alerts).
func (p *prometheus) alerts() ([]promAlert, error) {
	var r struct {
		Data struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	err := getJSON(p.url+"/api/v1/alerts", &r)
	return r.Data.Alerts, err
}

// mustAlerts is alerts, failing the test when Prometheus does not answer.
func (p *prometheus) mustAlerts(t *testing.T) []promAlert {
	t.Helper()
	out, err := p.alerts()
	if err != nil {
		t.Fatalf("prometheus alerts: %v", err)
	}
	return out
}

// activeAlerts lists the alerts pending or firing, each as name/pod=state.
func (p *prometheus) activeAlerts(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, a := range p.mustAlerts(t) {
		out = append(out, fmt.Sprintf("%s/%s=%s %v", a.Labels["alertname"], a.Labels["pod"], a.State, a.Labels))
	}
	return out
}

// firing is the labels of one firing instance of each alert that fires.
func (p *prometheus) firing(t *testing.T) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, a := range p.mustAlerts(t) {
		if a.State == "firing" {
			out[a.Labels["alertname"]] = a.Labels
		}
	}
	return out
}

// alert is "" when alert name is pending or firing for pod, else why not.
func (p *prometheus) alert(t *testing.T, name, pod string) string {
	t.Helper()
	alerts, err := p.alerts()
	if err != nil {
		return err.Error()
	}
	var active []string
	for _, a := range alerts {
		active = append(active, a.Labels["alertname"]+"/"+a.Labels["pod"]+"="+a.State)
		if a.Labels["alertname"] == name && a.Labels["pod"] == pod {
			t.Logf("%s for %s: %s", name, pod, a.State)
			return ""
		}
	}
	return fmt.Sprintf("active alerts: %v", active)
}
