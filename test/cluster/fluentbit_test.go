// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFluentBitDaemonSetAsReadme applies deploy/fluent-bit as deploy/README.md says,
// after the README's own commands created its namespace, its client certificate and
// the relay's CA. fluent-bit's image cannot be had here (no registry), so the test
// overlay only sets its pull policy to Never: the kubelet then schedules the pod and
// sets up every volume it mounts (the Secret, the ConfigMaps, /var/log, the state
// hostPath) and stops at the image, which is as far as a pod can go without it.
// TestLogsEndToEnd's sender mounts the same Secret and /var/log and sends as
// fluent-bit's opentelemetry output does.
func TestFluentBitDaemonSetAsReadme(t *testing.T) {
	install(t)
	const state = "/var/fluent-bit"
	_, err := os.Stat(state)
	stateExisted := err == nil
	overlay := t.TempDir()
	base := repoRel(t, overlay, "deploy", "fluent-bit")
	writeFile(t, filepath.Join(overlay, "kustomization.yaml"), []byte(fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
patches:
  - target: {kind: DaemonSet, name: fluent-bit}
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/imagePullPolicy
        value: Never
`, base)))
	mustKubectl(t, "", "apply", "--server-side", "-k", overlay)
	t.Cleanup(func() {
		// Gone before the other tests pick the logging namespace's fluent-bit pod.
		if _, err := kubectl(t, "", "-n", loggingNS, "delete", "daemonset", "fluent-bit", "--cascade=foreground", "--wait", "--timeout=2m"); err != nil {
			t.Errorf("deleting the DaemonSet: %v", err)
		}
		if !stateExisted {
			if err := os.RemoveAll(state); err != nil {
				t.Errorf("removing the state hostPath the kubelet created: %v", err)
			}
		}
	})

	selector := "app.kubernetes.io/name=fluent-bit,app.kubernetes.io/part-of=otelcol-relay"
	var pod string
	eventually(t, "fluent-bit's pod set up and waiting for its image", 2*time.Minute, func() string {
		var pl struct {
			Items []struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Spec struct {
					NodeName string `json:"nodeName"`
				} `json:"spec"`
				Status struct {
					ContainerStatuses []struct {
						State struct {
							Waiting *struct {
								Reason string `json:"reason"`
							} `json:"waiting"`
						} `json:"state"`
					} `json:"containerStatuses"`
				} `json:"status"`
			} `json:"items"`
		}
		out, err := kubectl(t, "", "-n", loggingNS, "get", "pods", "-l", selector, "-o", "json")
		if err != nil {
			return err.Error()
		}
		if err := json.Unmarshal([]byte(out), &pl); err != nil {
			return err.Error()
		}
		if len(pl.Items) != 1 {
			return fmt.Sprintf("%d pods, want one on the one node", len(pl.Items))
		}
		p := pl.Items[0]
		pod = p.Metadata.Name
		if p.Spec.NodeName == "" {
			return pod + " is not scheduled"
		}
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return pod + " has no waiting container yet"
		}
		if r := p.Status.ContainerStatuses[0].State.Waiting.Reason; r != "ErrImageNeverPull" {
			return pod + " waits for " + r
		}
		return ""
	})
	// The kubelet reached the image only after mounting every volume; a missing
	// Secret or ConfigMap would have left the pod in ContainerCreating with
	// FailedMount events instead.
	events := mustKubectl(t, "", "-n", loggingNS, "get", "events", "--field-selector", "involvedObject.name="+pod, "-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}")
	if strings.Contains(events, "FailedMount") {
		t.Errorf("fluent-bit's pod could not mount a volume:\n%s", events)
	}
	for _, kind := range []string{"serviceaccount/fluent-bit", "configmap/fluent-bit-otelcol-relay"} {
		mustKubectl(t, "", "-n", loggingNS, "get", kind)
	}
	mustKubectl(t, "", "auth", "can-i", "list", "pods", "--as", "system:serviceaccount:"+loggingNS+":fluent-bit")
	if _, err := os.Stat(state); err != nil {
		t.Errorf("the kubelet did not set up the state hostPath %s: %v", state, err)
	}
}
