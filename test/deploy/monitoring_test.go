// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// monitor is what a prometheus-operator ServiceMonitor or PodMonitor says about
// the targets it makes: what it selects, the port, and the job label.
type monitor struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name, Namespace string
	} `json:"metadata"`
	Spec struct {
		JobLabel  string               `json:"jobLabel"`
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []monitorEndpoint    `json:"endpoints"`
		PodEPs    []monitorEndpoint    `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

type monitorEndpoint struct {
	Port        string `json:"port"`
	Relabelings []struct {
		TargetLabel string `json:"targetLabel"`
		Replacement string `json:"replacement"`
		Action      string `json:"action"`
	} `json:"relabelings"`
}

// scrapeTarget is one workload's pods as a monitor scrapes them.
type scrapeTarget struct {
	by, job string
	port    int32
}

// TestDeployMonitoringCoversRelayAndFederation: with deploy/components/servicemonitor
// (the platform overlay, with the federation component), both workloads' :8888 are scraped, each by exactly one
// monitor, Prometheus may reach them through the NetworkPolicies, and every alert
// of deploy/components/alerts selects the job labels the scrapes produce. Before,
// only the relay's Service was scraped, so the federation alerts saw no data.
func TestDeployMonitoringCoversRelayAndFederation(t *testing.T) {
	// The platform overlay federating (it does not as shipped), and the same moved
	// to a user's namespace under a namePrefix: the jobs must not follow the names.
	shipped := manifest.OverlayOf(t, []string{manifest.Dir("overlays", "platform")}, manifest.Dir("components", "federation"))
	for name, dir := range map[string]string{"as shipped": shipped, "moved to team-obs as a-": manifest.MovedTo(t, shipped, "team-obs", "a-")} {
		t.Run(name, func(t *testing.T) { monitoringCovers(t, dir) })
	}
}

func monitoringCovers(t *testing.T, dir string) {
	t.Helper()
	var monitors []monitor
	for _, doc := range manifest.Docs(t, dir) {
		var m monitor
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if m.Kind == "ServiceMonitor" || m.Kind == "PodMonitor" {
			monitors = append(monitors, m)
		}
	}
	r := manifest.Render(t, dir)
	pols := networkPolicies(t, dir)
	prometheus := peer{name: "Prometheus", ip: "10.244.9.9", podLabels: map[string]string{"app.kubernetes.io/name": "prometheus"}, nsLabs: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}
	other := peer{name: "an application pod", ip: "10.244.3.7", podLabels: map[string]string{"app": "checkout"}, nsLabs: map[string]string{"kubernetes.io/metadata.name": "payments"}}

	jobs := map[string]string{} // workload -> job
	for _, component := range []string{"gateway", "federation"} {
		sts := r.StatefulSetOf(t, component)
		pod := sts.Spec.Template.Labels
		var targets []scrapeTarget
		for _, m := range monitors {
			targets = append(targets, scrapes(t, m, sts, r.Services)...)
		}
		if len(targets) != 1 {
			t.Errorf("%s pods are scraped by %d monitors %v, want exactly 1", sts.Name, len(targets), targets)
			continue
		}
		tg := targets[0]
		t.Logf("%s: scraped by %s on :%d as job %q", sts.Name, tg.by, tg.port, tg.job)
		jobs[sts.Name] = tg.job
		if tg.port != 8888 {
			t.Errorf("%s: %s scrapes port %d, the collector serves its metrics on 8888", sts.Name, tg.by, tg.port)
		}
		if !ingressAllowed(t, pols, pod, prometheus, tg.port) {
			t.Errorf("%s: the NetworkPolicies do not let Prometheus reach :%d; the scrape would report up=0", sts.Name, tg.port)
		}
		if ingressAllowed(t, pols, pod, other, tg.port) {
			t.Errorf("%s: :%d is open to any pod", sts.Name, tg.port)
		}
	}

	// Every alert reads metrics both workloads serve (queue, send failures;
	// federation's metadata age): its job matcher must take both jobs.
	_, alerts := ruleFileFromPrometheusRule(t)
	for _, a := range alerts {
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
				for workload, job := range jobs {
					if !m.Matches(job) {
						t.Errorf("alert %s: selector %s does not match job %q, which %s is scraped as", a.name, vs, job, workload)
					}
				}
			}
			return nil
		})
	}
}

// scrapes returns the targets monitor m makes of sts's pods: through a selected
// Service whose selector takes the pods (ServiceMonitor), or directly (PodMonitor).
func scrapes(t *testing.T, m monitor, sts appsv1.StatefulSet, services []corev1.Service) []scrapeTarget {
	t.Helper()
	if m.Metadata.Namespace != sts.Namespace {
		return nil // no namespaceSelector here: a monitor sees its own namespace
	}
	pod := labels.Set(sts.Spec.Template.Labels)
	sel := selector(t, &m.Spec.Selector)
	containerPort := func(name string) int32 {
		for _, c := range sts.Spec.Template.Spec.Containers {
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
			if svc.Namespace != sts.Namespace || !sel.Matches(labels.Set(svc.Labels)) || len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(pod) {
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
func relabeledJob(ep monitorEndpoint, job string) string {
	for _, r := range ep.Relabelings {
		if r.TargetLabel == "job" && (r.Action == "" || strings.EqualFold(r.Action, "replace")) && r.Replacement != "" {
			job = r.Replacement
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
