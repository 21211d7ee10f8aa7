// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// TestDeployImageIsWhatMakeImageBuilds: every container of every overlay runs the
// image `make image` tags on a release checkout (VERSION as its tag, v-prefixed);
// a user who builds or mirrors it under another name points kustomize `images:` at
// it (deploy/README.md). A name the build does not produce is an ErrImagePull on
// every pod.
func TestDeployImageIsWhatMakeImageBuilds(t *testing.T) {
	version, err := os.ReadFile(filepath.Join(e2e.RepoRoot(), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("make", "-s", "-C", e2e.RepoRoot(), "print-image", "VERSION=v"+strings.TrimSpace(string(version))).CombinedOutput()
	if err != nil {
		t.Fatalf("make print-image: %v\n%s", err, out)
	}
	want := strings.TrimSpace(string(out))
	for _, o := range append([]string{"platform"}, manifest.Overlays()...) {
		r := manifest.Render(t, manifest.Dir("overlays", o))
		check := func(kind, name string, images []string) {
			for _, img := range images {
				if img != want {
					t.Errorf("overlay %s: %s %s runs image %q, `make image` on release %s tags %q",
						o, kind, name, img, strings.TrimSpace(string(version)), want)
				}
			}
		}
		for _, s := range r.StatefulSets {
			var imgs []string
			for _, c := range append(s.Spec.Template.Spec.InitContainers, s.Spec.Template.Spec.Containers...) {
				imgs = append(imgs, c.Image)
			}
			check("StatefulSet", s.Name, imgs)
		}
		for _, d := range r.DaemonSets {
			var imgs []string
			for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
				imgs = append(imgs, c.Image)
			}
			check("DaemonSet", d.Name, imgs)
		}
	}
}
