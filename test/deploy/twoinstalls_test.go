// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"os"
	"strings"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// object is what the API server tells two objects apart by.
type object struct{ apiVersion, kind, namespace, name string }

// objects renders dir and returns its objects by identity.
func objects(t *testing.T, dir string) map[object]bool {
	t.Helper()
	out := map[object]bool{}
	for _, doc := range manifest.Docs(t, dir) {
		var o struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		manifest.UnmarshalLoose(t, doc, &o)
		// The group alone: a version is one view of the same stored object.
		group, _, _ := strings.Cut(o.APIVersion, "/")
		if !strings.Contains(o.APIVersion, "/") {
			group = "core"
		}
		out[object{group, o.Kind, o.Metadata.Namespace, o.Metadata.Name}] = true
	}
	return out
}

// shared are the objects both renders create: what one install's apply would
// take over from the other.
func shared(a, b map[object]bool) []object {
	var both []object
	for o := range a {
		if b[o] {
			both = append(both, o)
		}
	}
	return both
}

// TestDeployTwoInstallsShareNoObject: two installs of a movable root, each in a
// namespace and under a namePrefix of its own as deploy/README.md says, create no
// object in common, cluster-scoped ones included (ClusterRoles, their bindings, a
// PriorityClass): neither's apply changes, and neither's delete removes, what the
// other runs on. Without the prefix the cluster-scoped objects are the same ones,
// which is why the guide asks for it; the test holds that the guide still says so
// for as long as they are.
func TestDeployTwoInstallsShareNoObject(t *testing.T) {
	for name, root := range movableRoots(t) {
		t.Run(name, func(t *testing.T) {
			shipped := objects(t, root)
			first := objects(t, manifest.MovedTo(t, root, "team-a", "a-"))
			second := objects(t, manifest.MovedTo(t, root, "team-b", "b-"))
			for _, pair := range []struct {
				what string
				a, b map[object]bool
			}{
				{"the shipped install and team-a's (a-)", shipped, first},
				{"team-a's (a-) and team-b's (b-)", first, second},
			} {
				for _, o := range shared(pair.a, pair.b) {
					t.Errorf("%s both create %s %s %s/%s", pair.what, o.apiVersion, o.kind, o.namespace, o.name)
				}
			}
			clusterWide := 0
			for o := range shipped {
				if o.namespace == "" && o.kind != "Namespace" {
					clusterWide++
				}
			}
			unprefixed := shared(shipped, objects(t, manifest.MovedTo(t, root, "team-c", "")))
			if clusterWide > 0 && len(unprefixed) == 0 {
				t.Errorf("%d cluster-scoped objects, and a move without namePrefix shares none of them: the evaluation is wrong", clusterWide)
			}
		})
	}
	guide, err := os.ReadFile(manifest.Dir("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(guide)), " "), "for a second install beside the first, also a `namePrefix:` of its own") {
		t.Error("deploy/README.md no longer tells a second install to set a namePrefix of its own, and without one two installs share their cluster-scoped objects")
	}
}
