// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// Every collector the overlays deploy validates with the command and environment
// its manifest gives it, without a cluster.

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// TestDeployConfigsValidate runs `otelcol-relay validate` on every collector the
// overlays deploy, exactly as the pod would start it: the args from the manifest,
// the config files from the generated ConfigMap, and the environment the manifest
// sets (values from Secrets and ConfigMaps replaced by placeholders, envFrom
// ConfigMaps as rendered). A variable the config needs but the manifest forgets
// fails here, not in a cluster. StatefulSets with a fixed replica count (the
// federation shards) are validated for every pod index.
func TestDeployConfigsValidate(t *testing.T) {
	for _, o := range append([]string{"../base", "../agent"}, manifest.Overlays()...) {
		validateOverlay(t, manifest.Dir("overlays", o))
	}
	for _, dir := range manifest.FederationOverlays(t) {
		validateOverlay(t, dir)
	}
}

func validateOverlay(t *testing.T, dir string) {
	t.Helper()
	r := manifest.Render(t, dir)
	type instance struct {
		name  string
		spec  corev1.PodSpec
		index string
	}
	var pods []instance
	for _, s := range r.StatefulSets {
		n := int32(1) // the relay: the HPA sets replicas, its config does not depend on the index
		if s.Spec.Replicas != nil {
			n = *s.Spec.Replicas
		}
		for i := range n {
			pods = append(pods, instance{fmt.Sprintf("%s-%d", s.Name, i), s.Spec.Template.Spec, strconv.FormatInt(int64(i), 10)})
		}
	}
	for _, d := range r.DaemonSets {
		pods = append(pods, instance{d.Name, d.Spec.Template.Spec, ""})
	}
	if len(pods) == 0 {
		t.Fatalf("%s renders no StatefulSet or DaemonSet", dir)
	}
	for _, p := range pods {
		t.Run(filepath.Base(dir)+"/"+p.name, func(t *testing.T) {
			args, env := podCommand(t, r, p.spec, p.name, p.index)
			// Components check the ServiceAccount files a pod has at validate time.
			env = append(env, e2e.InPod(t, "validate-token", testcerts.NewCA(t, "validate").CertPEM, "127.0.0.1", "6443")...)
			if out, code := e2e.Run(t, 2*time.Minute, env, append([]string{"validate"}, args...)...); code != 0 {
				t.Fatalf("validate %v (exit %d):\n%s", args, code, out)
			}
		})
	}
}
