// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

// Helpers the end-to-end tests share: objects on an API server, and small string
// and metric helpers.

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

func resourceVersions(t *testing.T, k *e2e.Kube, dir string) []string {
	t.Helper()
	out := k.MustKubectl(t, "get", "-k", dir, "-o", `jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}`)
	lines := strings.Fields(out)
	sort.Strings(lines)
	return lines
}

func installServiceMonitorCRD(t *testing.T, k *e2e.Kube) {
	t.Helper()
	// The prometheus-operator CRD, reduced to what the API server needs to store
	// a ServiceMonitor.
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`
	p := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(p, []byte(crd), 0o600); err != nil {
		t.Fatal(err)
	}
	k.MustKubectl(t, "apply", "--server-side", "-f", p)
	k.MustKubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/servicemonitors.monitoring.coreos.com")
}

func tail(s string) string {
	if len(s) > 6000 {
		return "..." + s[len(s)-6000:]
	}
	return s
}

func grepLines(s, substr string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func forEachMetric(rm pmetric.ResourceMetrics, f func(pmetric.Metric)) {
	for j := 0; j < rm.ScopeMetrics().Len(); j++ {
		ms := rm.ScopeMetrics().At(j).Metrics()
		for k := 0; k < ms.Len(); k++ {
			f(ms.At(k))
		}
	}
}
