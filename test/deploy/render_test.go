// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// What the overlays render, checked without a cluster where a mistake would be
// silent in one.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// TestDeployOverlayInvariants checks what each overlay renders where a mistake would
// be silent in a cluster: the ServiceMonitor comes only with the NetworkPolicy rule
// that lets Prometheus reach :8888 (and selects a Service with a metrics port), and
// kubelet certificate verification is skipped in the AKS overlay only.
func TestDeployOverlayInvariants(t *testing.T) {
	for _, o := range append([]string{"../base", "../agent"}, manifest.Overlays()...) {
		out := manifest.Kustomize(t, manifest.Dir("overlays", o))
		var monitors, metricsRules int
		var services []corev1.Service
		var monitorSelector map[string]string
		insecure := false
		for _, doc := range strings.Split(out, "\n---\n") {
			var obj metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatal(err)
			}
			switch obj.Kind {
			case "ServiceMonitor":
				monitors++
				var sm struct {
					Spec struct {
						Selector  metav1.LabelSelector `json:"selector"`
						Endpoints []struct {
							Port string `json:"port"`
						} `json:"endpoints"`
					} `json:"spec"`
				}
				if err := yaml.Unmarshal([]byte(doc), &sm); err != nil {
					t.Fatal(err)
				}
				monitorSelector = sm.Spec.Selector.MatchLabels
			case "NetworkPolicy":
				var np struct {
					Spec struct {
						Ingress []struct {
							Ports []struct {
								Port any `json:"port"`
							} `json:"ports"`
						} `json:"ingress"`
					} `json:"spec"`
				}
				if err := yaml.Unmarshal([]byte(doc), &np); err != nil {
					t.Fatal(err)
				}
				for _, in := range np.Spec.Ingress {
					for _, p := range in.Ports {
						if fmt.Sprint(p.Port) == "8888" || p.Port == "metrics" {
							metricsRules++
						}
					}
				}
			case "Service":
				var svc corev1.Service
				manifest.Unmarshal(t, doc, &svc)
				services = append(services, svc)
			case "DaemonSet":
				var ds appsv1.DaemonSet
				manifest.Unmarshal(t, doc, &ds)
				for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
					if e.Name == "KUBELET_INSECURE_SKIP_VERIFY" && e.Value != "false" {
						insecure = true
					}
				}
			}
		}
		if monitors != metricsRules {
			t.Errorf("%s: %d ServiceMonitors but %d NetworkPolicy rules opening :8888; they must come together", o, monitors, metricsRules)
		}
		if monitors > 0 {
			matched := 0
			for _, svc := range services {
				ok := true
				for k, v := range monitorSelector {
					ok = ok && svc.Labels[k] == v
				}
				if ok {
					matched++
					if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "metrics" }) {
						t.Errorf("%s: ServiceMonitor selects Service %s, which has no metrics port", o, svc.Name)
					}
				}
			}
			if matched != 1 {
				t.Errorf("%s: ServiceMonitor selector %v matches %d Services, want exactly 1 (each replica scraped once)", o, monitorSelector, matched)
			}
		}
		if insecure != (o == "aks") {
			t.Errorf("%s: kubelet certificate verification skipped = %v; only the aks overlay may skip it", o, insecure)
		}
	}
}
