// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// TestDeployRBACFollowsUsersNamespace renders each install root the way a user
// moves it: their own kustomization with `namespace:` and `namePrefix:` over
// ours. Every ServiceAccount a (Cluster)RoleBinding grants to must be one the
// render holds, under its new name and in its new namespace; otherwise the
// pods run without their rights (k8s_attributes, the kubernetes filter,
// federation's SubjectAccessReview are all forbidden).
func TestDeployRBACFollowsUsersNamespace(t *testing.T) {
	roots := map[string]string{
		"base":       manifest.Dir("base"),
		"agent":      manifest.Dir("agent"),
		"fluent-bit": manifest.Dir("fluent-bit"),
		"platform":   manifest.Dir("overlays", "platform"),
		"federation": manifest.FederationOverlay(t),
	}
	for _, o := range manifest.Overlays() {
		roots[o] = manifest.Dir("overlays", o)
	}
	for name, root := range roots {
		t.Run(name, func(t *testing.T) {
			dir := userKustomization(t, "team-obs", "a-", root)
			accounts := map[string]bool{}
			type binding struct {
				Kind     string            `json:"kind"`
				Metadata metav1.ObjectMeta `json:"metadata"`
				Subjects []struct {
					Kind      string `json:"kind"`
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"subjects"`
			}
			var bindings []binding
			for _, doc := range manifest.Docs(t, dir) {
				var b binding
				manifest.UnmarshalLoose(t, doc, &b)
				switch b.Kind {
				case "ServiceAccount":
					accounts[b.Metadata.Namespace+"/"+b.Metadata.Name] = true
				case "RoleBinding", "ClusterRoleBinding":
					bindings = append(bindings, b)
				}
			}
			if len(bindings) == 0 {
				t.Fatal("no binding rendered: the test checks nothing")
			}
			for _, b := range bindings {
				for _, s := range b.Subjects {
					if s.Kind != "ServiceAccount" {
						continue
					}
					if key := s.Namespace + "/" + s.Name; !accounts[key] {
						t.Errorf("%s %s grants to ServiceAccount %s, which the render does not hold (it holds %v)",
							b.Kind, b.Metadata.Name, key, slices.Sorted(maps.Keys(accounts)))
					}
				}
			}
		})
	}
}

// userKustomization writes a user's kustomization over root with namespace and
// namePrefix, and returns its folder.
func userKustomization(t *testing.T, namespace, prefix, root string) string {
	t.Helper()
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, root)
	if err != nil {
		t.Fatal(err)
	}
	k, err := yaml.Marshal(map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"namespace":  namespace,
		"namePrefix": prefix,
		"resources":  []string{rel},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), k, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
