// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// scrapeTarget is one workload's pods as a monitor scrapes them.
type scrapeTarget struct {
	by, job string
	port    int32
}

// workload is the pods a monitor must scrape, a StatefulSet's or a DaemonSet's, and
// the port their metrics are served on.
type workload struct {
	name, namespace string
	template        corev1.PodTemplateSpec
	port            int32
}

// TestDeployMonitoringCoversEveryHop: with deploy/components/servicemonitor (the
// platform overlay, with the federation component) the relay's, federation's and the
// agents' :8888 are scraped, and with deploy/components/fluent-bit-monitoring
// (overlays/platform-fluent-bit) fluent-bit's :2020; each by exactly one monitor,
// Prometheus may reach them through the NetworkPolicies and no other pod may, and
// every alert of deploy/components/alerts selects the job labels the scrapes
// produce: the relay's own alerts both the relay's and federation's (they serve the
// same metrics), the pipeline's the job of the hop they watch.
func TestDeployMonitoringCoversEveryHop(t *testing.T) {
	// The platform overlay federating (it does not as shipped), and the same moved
	// to a user's namespace under a namePrefix: the jobs must not follow the names.
	shipped := manifest.OverlayOf(t, []string{manifest.Dir("overlays", "platform")}, manifest.Dir("components", "federation"))
	relay := func(r manifest.Rendered) []workload {
		var out []workload
		for _, c := range []string{"gateway", "federation"} {
			s := r.StatefulSetOf(t, c)
			out = append(out, workload{s.Name, s.Namespace, s.Spec.Template, 8888})
		}
		return append(out, daemonSetOf(t, r, "app.kubernetes.io/component", "agent", 8888))
	}
	jobs := map[string]string{} // workload -> job, as shipped
	t.Run("as shipped", func(t *testing.T) { maps.Copy(jobs, monitoringCovers(t, shipped, relay)) })
	t.Run("moved to team-obs as a-", func(t *testing.T) {
		monitoringCovers(t, manifest.MovedTo(t, shipped, "team-obs", "a-"), relay)
	})
	t.Run("fluent-bit", func(t *testing.T) {
		maps.Copy(jobs, monitoringCovers(t, manifest.Dir("overlays", "platform-fluent-bit"), func(r manifest.Rendered) []workload {
			return []workload{daemonSetOf(t, r, "app.kubernetes.io/name", "fluent-bit", 2020)}
		}))
	})
	if len(jobs) != 4 {
		t.Fatalf("jobs of %d workloads, want 4: %v", len(jobs), jobs)
	}

	_, alerts, records := ruleFileFromPrometheusRule(t)
	for _, a := range slices.Concat(alerts, records) {
		e, err := promql.ParseExpr(a.expr)
		if err != nil {
			t.Fatalf("alert %s: %v", a.name, err)
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			for _, m := range vs.LabelMatchers {
				if m.Name != "job" {
					continue
				}
				var matched []string
				for workload, job := range jobs {
					if m.Matches(job) {
						matched = append(matched, workload)
					}
				}
				if len(matched) == 0 {
					t.Errorf("alert %s: selector %s matches no job a monitor produces (%v)", a.name, vs, jobs)
				}
				if a.group != "otelcol-relay" {
					continue
				}
				for _, workload := range []string{"otelcol-relay", "otelcol-relay-federation"} {
					if !m.Matches(jobs[workload]) {
						t.Errorf("alert %s: selector %s does not match job %q, which %s is scraped as", a.name, vs, jobs[workload], workload)
					}
				}
			}
			return nil
		})
	}
}

// daemonSetOf is the DaemonSet of r whose pods carry label=value.
func daemonSetOf(t *testing.T, r manifest.Rendered, label, value string, port int32) workload {
	t.Helper()
	for _, d := range r.DaemonSets {
		if d.Spec.Template.Labels[label] == value {
			return workload{d.Name, d.Namespace, d.Spec.Template, port}
		}
	}
	t.Fatalf("no DaemonSet whose pods have %s=%s", label, value)
	return workload{}
}

// monitoringCovers checks that each workload of dir is scraped once, on its port,
// reachable by Prometheus alone, and returns the job of each (by its name without
// a namePrefix).
func monitoringCovers(t *testing.T, dir string, workloads func(manifest.Rendered) []workload) map[string]string {
	t.Helper()
	monitors := manifest.Monitors(t, dir)
	r := manifest.Render(t, dir)
	pols := networkPolicies(t, dir)
	prometheus := peer{name: "Prometheus", ip: "10.244.9.9", podLabels: map[string]string{"app.kubernetes.io/name": "prometheus"}, nsLabs: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}
	other := peer{name: "an application pod", ip: "10.244.3.7", podLabels: map[string]string{"app": "checkout"}, nsLabs: map[string]string{"kubernetes.io/metadata.name": "payments"}}

	jobs := map[string]string{}
	for _, w := range workloads(r) {
		var targets []scrapeTarget
		for _, m := range monitors {
			targets = append(targets, scrapes(t, m, w, r.Services)...)
		}
		if len(targets) != 1 {
			t.Errorf("%s pods are scraped by %d monitors %v, want exactly 1", w.name, len(targets), targets)
			continue
		}
		tg := targets[0]
		t.Logf("%s: scraped by %s on :%d as job %q", w.name, tg.by, tg.port, tg.job)
		jobs[strings.TrimPrefix(w.name, "a-")] = tg.job
		if tg.port != w.port {
			t.Errorf("%s: %s scrapes port %d, its metrics are served on %d", w.name, tg.by, tg.port, w.port)
		}
		if !ingressAllowed(t, pols, w.template.Labels, prometheus, tg.port) {
			t.Errorf("%s: the NetworkPolicies do not let Prometheus reach :%d; the scrape would report up=0", w.name, tg.port)
		}
		if ingressAllowed(t, pols, w.template.Labels, other, tg.port) {
			t.Errorf("%s: :%d is open to any pod", w.name, tg.port)
		}
	}
	return jobs
}

// scrapes returns the targets monitor m makes of w's pods: through a selected
// Service whose selector takes the pods (ServiceMonitor), or directly (PodMonitor).
func scrapes(t *testing.T, m manifest.Monitor, w workload, services []corev1.Service) []scrapeTarget {
	t.Helper()
	if m.Metadata.Namespace != w.namespace {
		return nil // no namespaceSelector here: a monitor sees its own namespace
	}
	pod := labels.Set(w.template.Labels)
	sel := selector(t, &m.Spec.Selector)
	containerPort := func(name string) int32 {
		for _, c := range w.template.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == name {
					return p.ContainerPort
				}
			}
		}
		return 0
	}
	var out []scrapeTarget
	switch m.Kind {
	case "PodMonitor":
		if !sel.Matches(pod) {
			return nil
		}
		for _, ep := range m.Spec.PodEPs {
			job := m.Metadata.Namespace + "/" + m.Metadata.Name // the operator's default
			if m.Spec.JobLabel != "" {
				job = pod[m.Spec.JobLabel]
			}
			out = append(out, scrapeTarget{by: "PodMonitor/" + m.Metadata.Name, job: relabeledJob(ep, job), port: containerPort(ep.Port)})
		}
	case "ServiceMonitor":
		for _, svc := range services {
			if svc.Namespace != w.namespace || !sel.Matches(labels.Set(svc.Labels)) || len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(pod) {
				continue
			}
			for _, ep := range m.Spec.Endpoints {
				i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port })
				if i < 0 {
					t.Errorf("ServiceMonitor/%s: Service %s has no port %q", m.Metadata.Name, svc.Name, ep.Port)
					continue
				}
				port := svc.Spec.Ports[i].TargetPort.IntVal
				if svc.Spec.Ports[i].TargetPort.StrVal != "" {
					port = containerPort(svc.Spec.Ports[i].TargetPort.StrVal)
				}
				job := svc.Name // the operator's default
				if m.Spec.JobLabel != "" {
					job = svc.Labels[m.Spec.JobLabel]
				}
				out = append(out, scrapeTarget{by: fmt.Sprintf("ServiceMonitor/%s via Service %s", m.Metadata.Name, svc.Name), job: relabeledJob(ep, job), port: port})
			}
		}
	}
	return out
}

// relabeledJob applies an endpoint's relabelings that write a fixed job.
func relabeledJob(ep manifest.MonitorEndpoint, job string) string {
	for _, r := range ep.Relabelings {
		if r.TargetLabel == "job" && (r.Action == "" || strings.EqualFold(r.Action, "replace")) && r.Replacement != nil && *r.Replacement != "" {
			job = *r.Replacement
		}
	}
	return job
}

// TestDeployMonitoringSelectedByPrometheus: prometheus-operator ignores a monitor or
// rule whose labels its Prometheus does not select, silently. The platform overlay
// labels every monitoring.coreos.com object with kube-prometheus-stack's `release`
// selector, so they are picked up; the label is the knob deploy/docs/monitoring.md documents.
func TestDeployMonitoringSelectedByPrometheus(t *testing.T) {
	dir := manifest.Dir("overlays", "platform")
	kinds := map[string]int{}
	for _, doc := range manifest.Docs(t, dir) {
		var obj struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Metadata   metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(obj.APIVersion, "monitoring.coreos.com/") {
			continue
		}
		kinds[obj.Kind]++
		if got := obj.Metadata.Labels["release"]; got != "kube-prometheus-stack" {
			t.Errorf("%s %s has release=%q: kube-prometheus-stack's Prometheus would not select it", obj.Kind, obj.Metadata.Name, got)
		}
	}
	for _, k := range []string{"ServiceMonitor", "PodMonitor", "PrometheusRule"} {
		if kinds[k] == 0 {
			t.Errorf("the platform overlay renders no %s", k)
		}
	}
}
