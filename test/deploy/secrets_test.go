// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// Secrets in the pods: private keys readable by the collector's group only,
// and no API token in a pod that uses no Kubernetes API.

import (
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// secretModeMax: owner and group read, nothing for others. The kubelet makes
// the files root-owned and, with fsGroup, group-owned by it: the collector
// (runAsUser 10001) reads them through that group.
const secretModeMax = 0o440

// TestDeploySecretVolumesAreGroupReadOnly renders every overlay and checks each
// volume that holds a Secret (a secret volume, or a projected one with a secret
// or token source): its mode grants nothing to others and lets the pod's
// fsGroup read, and the pod sets an fsGroup the container runs with.
func TestDeploySecretVolumesAreGroupReadOnly(t *testing.T) {
	dirs := []string{manifest.Dir("base"), manifest.Dir("agent"), manifest.Dir("fluent-bit"), manifest.Dir("overlays", "platform"),
		manifest.OverlayOf(t, []string{manifest.Dir("base")}, manifest.Dir("components", "backend-default-mtls"))}
	for _, d := range manifest.FederationOverlays(t) {
		dirs = append(dirs, d)
	}
	for _, o := range manifest.Overlays() {
		dirs = append(dirs, manifest.Dir("overlays", o))
	}
	for _, o := range dirs {
		r := manifest.Render(t, o)
		specs := map[string]corev1.PodSpec{}
		for _, s := range r.StatefulSets {
			specs["StatefulSet/"+s.Name] = s.Spec.Template.Spec
		}
		for _, d := range r.DaemonSets {
			specs["DaemonSet/"+d.Name] = d.Spec.Template.Spec
		}
		for name, spec := range specs {
			for _, v := range spec.Volumes {
				mode, holds := secretVolumeMode(v)
				if !holds {
					continue
				}
				where := fmt.Sprintf("%s: %s volume %s", o, name, v.Name)
				switch {
				case mode == nil:
					t.Errorf("%s: no defaultMode, so its files are 0644: a private key any process in the container can read", where)
					continue
				case *mode&^secretModeMax != 0:
					t.Errorf("%s: defaultMode %#o grants more than %#o", where, *mode, secretModeMax)
				case *mode&0o040 == 0:
					t.Errorf("%s: defaultMode %#o: the fsGroup cannot read it", where, *mode)
				}
				if runsAsRoot(spec) {
					continue // the files' owner: the mode's owner bits apply, no fsGroup needed
				}
				sc := spec.SecurityContext
				if sc == nil || sc.FSGroup == nil {
					t.Errorf("%s: the pod sets no fsGroup: the files stay root:root and user %v cannot read them", where, sc.RunAsUser)
				}
			}
		}
	}
}

// secretVolumeMode returns the mode a volume gives its files and whether it
// holds a Secret or a token at all.
func secretVolumeMode(v corev1.Volume) (*int32, bool) {
	switch {
	case v.Secret != nil:
		return v.Secret.DefaultMode, true
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			if s.Secret != nil || s.ServiceAccountToken != nil {
				return v.Projected.DefaultMode, true
			}
		}
	}
	return nil, false
}

// TestDeployFederationHasNoAPIToken: federation reads nothing from the API
// server, so its pod gets no automounted API token, and the token it sends to
// Prometheus is its own short-lived projected one, also where the config's
// default path is used.
func TestDeployFederationHasNoAPIToken(t *testing.T) {
	fed, seen := manifest.FederationOverlays(t), 0
	for o, dir := range fed {
		r := manifest.Render(t, dir)
		for _, s := range r.StatefulSets {
			if s.Name != "otelcol-relay-federation" {
				continue
			}
			seen++
			spec := s.Spec.Template.Spec
			if a := spec.AutomountServiceAccountToken; a == nil || *a {
				t.Errorf("%s: %s automounts the ServiceAccount's API token (automountServiceAccountToken: %v); it uses no Kubernetes API", o, s.Name, a)
			}
			for _, c := range spec.Containers {
				for _, m := range c.VolumeMounts {
					if m.MountPath == "/var/run/secrets/kubernetes.io/serviceaccount" {
						t.Errorf("%s: %s mounts %s at the API token's path", o, s.Name, m.Name)
					}
				}
			}
		}
	}
	if seen != len(fed) {
		t.Errorf("%d federation StatefulSets in the %d manifest.Overlays() that add federation", seen, len(fed))
	}
	// The scrape's and federation_types' token, both with the projected token as
	// the default.
	cfg := readConfig(t, manifest.Dir("components", "federation", "federation.yaml"))
	const want = "bearer_token_file: ${env:RELAY_FEDERATION_TOKEN_FILE:-/var/run/secrets/otelcol-relay/federation/token}"
	if n := strings.Count(cfg, want); n != 2 {
		t.Errorf("federation.yaml has %d lines %q, want 2 (scrape and federation_types): without RELAY_FEDERATION_TOKEN_FILE one would send another token", n, want)
	}
}

func readConfig(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runsAsRoot reports a pod whose every container runs as uid 0 (fluent-bit, which
// reads every pod's log files).
func runsAsRoot(spec corev1.PodSpec) bool {
	for _, c := range spec.Containers {
		uid := c.SecurityContext
		switch {
		case uid != nil && uid.RunAsUser != nil:
			if *uid.RunAsUser != 0 {
				return false
			}
		case spec.SecurityContext != nil && spec.SecurityContext.RunAsUser != nil:
			if *spec.SecurityContext.RunAsUser != 0 {
				return false
			}
		default:
			return false // the image's user: unknown here
		}
	}
	return len(spec.Containers) > 0
}
