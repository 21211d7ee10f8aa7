// SPDX-License-Identifier: Apache-2.0

package manifest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// Monitor is what a prometheus-operator ServiceMonitor or PodMonitor says about the
// targets it makes: what it selects, on which port and path, and how it labels them.
type Monitor struct {
	Kind     string            `json:"kind"`
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		JobLabel  string               `json:"jobLabel"`
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []MonitorEndpoint    `json:"endpoints"`
		PodEPs    []MonitorEndpoint    `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// MonitorEndpoint is one endpoint of a monitor: a port by name, and how its
// targets are relabeled.
type MonitorEndpoint struct {
	Port        string       `json:"port"`
	Path        string       `json:"path"`
	Relabelings []Relabeling `json:"relabelings"`
}

// Relabeling is a monitor's relabeling, as prometheus-operator passes it to
// Prometheus.
type Relabeling struct {
	SourceLabels []string `json:"sourceLabels"`
	Separator    *string  `json:"separator"`
	Regex        string   `json:"regex"`
	TargetLabel  string   `json:"targetLabel"`
	Replacement  *string  `json:"replacement"`
	Action       string   `json:"action"`
}

// Monitors are the ServiceMonitors and PodMonitors kustomize renders from dir.
func Monitors(t tb.T, dir string) []Monitor {
	t.Helper()
	var out []Monitor
	for _, doc := range Docs(t, dir) {
		var m Monitor
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if m.Kind == "ServiceMonitor" || m.Kind == "PodMonitor" {
			out = append(out, m)
		}
	}
	return out
}
