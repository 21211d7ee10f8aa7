// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
	// The movable roots, and fluent-bit, whose RBAC moves with it.
	roots := movableRoots(t)
	roots["fluent-bit"] = manifest.Dir("fluent-bit")
	for name, root := range roots {
		t.Run(name, func(t *testing.T) {
			dir := manifest.MovedTo(t, root, "team-obs", "a-")
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

// TestDeployAgentFindsGatewayInUsersNamespace: under a user's namespace and
// namePrefix, the address each agent sends to (OTELCOL_RELAY_GATEWAY as the
// kubelet expands it) is the gateway Service of the render, in the agent's
// namespace, on its OTLP/gRPC port.
func TestDeployAgentFindsGatewayInUsersNamespace(t *testing.T) {
	roots := map[string]string{"platform": manifest.Dir("overlays", "platform")}
	for _, o := range []string{"aks", "example-backend"} {
		roots[o] = manifest.Dir("overlays", o)
	}
	for name, root := range roots {
		t.Run(name, func(t *testing.T) {
			var services []corev1.Service
			var agents []appsv1.DaemonSet
			for _, doc := range manifest.Docs(t, manifest.MovedTo(t, root, "team-obs", "a-")) {
				var meta metav1.TypeMeta
				manifest.UnmarshalLoose(t, doc, &meta)
				switch meta.Kind {
				case "Service":
					manifest.AppendDoc(t, doc, &services)
				case "DaemonSet":
					manifest.AppendDoc(t, doc, &agents)
				}
			}
			if len(agents) != 1 {
				t.Fatalf("%d DaemonSets rendered, want the agent's", len(agents))
			}
			d := agents[0]
			addr := manifest.Env(d.Namespace, d.Spec.Template.Spec.Containers[0])["OTELCOL_RELAY_GATEWAY"]
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("OTELCOL_RELAY_GATEWAY %q: %v", addr, err)
			}
			for _, svc := range services {
				if host != svc.Name+"."+svc.Namespace+".svc" {
					continue
				}
				for _, p := range svc.Spec.Ports {
					if strconv.Itoa(int(p.Port)) == port && p.Name == "otlp-grpc" {
						if svc.Name != "a-otelcol-relay" || svc.Namespace != d.Namespace {
							t.Errorf("OTELCOL_RELAY_GATEWAY %q is Service %s/%s, want the gateway's, a-otelcol-relay in %s", addr, svc.Namespace, svc.Name, d.Namespace)
						}
						return
					}
				}
			}
			t.Errorf("OTELCOL_RELAY_GATEWAY %q is no Service's otlp-grpc port in the render", addr)
		})
	}
}

// movableRoots are the install roots deploy/README.md says a user's kustomization
// can move to another namespace and rename with a namePrefix.
func movableRoots(t *testing.T) map[string]string {
	t.Helper()
	roots := map[string]string{
		"base":       manifest.Dir("base"),
		"agent":      manifest.Dir("agent"),
		"federation": manifest.FederationOverlay(t),
		"platform":   manifest.Dir("overlays", "platform"),
	}
	for _, o := range manifest.Overlays() {
		roots[o] = manifest.Dir("overlays", o)
	}
	return roots
}

// dnsInShippedNamespace is a Service address in the shipped namespace:
// <name>.otelcol-relay, with or without .svc[.cluster.local] and a port.
var dnsInShippedNamespace = regexp.MustCompile(`[a-z0-9-]+\.otelcol-relay(\.svc(\.cluster\.local)?)?(:[0-9]+)?($|[^a-z0-9.-])`)

// TestDeployNoShippedNamespaceLeftUnderUsersNamespace renders each movable root
// under a user's namespace and reports every value still naming the shipped
// namespace: a namespace field, a namespace selector's name, or a Service's DNS
// name in it. Each one would point the moved install at objects that are not
// there.
func TestDeployNoShippedNamespaceLeftUnderUsersNamespace(t *testing.T) {
	for name, root := range movableRoots(t) {
		t.Run(name, func(t *testing.T) {
			for _, doc := range manifest.Docs(t, manifest.MovedTo(t, root, "team-obs", "a-")) {
				var obj map[string]any
				if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
					t.Fatal(err)
				}
				meta, _ := obj["metadata"].(map[string]any)
				where := fmt.Sprintf("%v %v", obj["kind"], meta["name"])
				walk(obj, "", func(path, v string) {
					switch {
					case strings.HasSuffix(path, ".namespace") && v == "otelcol-relay",
						strings.Contains(path, "namespaceSelector") && v == "otelcol-relay",
						dnsInShippedNamespace.MatchString(v):
						t.Errorf("%s: %s names the shipped namespace: %q", where, path, excerpt(v))
					}
				})
			}
		})
	}
}

// walk calls f with the path and value of every string in v.
func walk(v any, path string, f func(path, v string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			walk(e, path+"."+k, f)
		}
	case []any:
		for i, e := range x {
			walk(e, fmt.Sprintf("%s[%d]", path, i), f)
		}
	case string:
		f(path, x)
	}
}

// excerpt is the match's line in a multi-line value (a config file).
func excerpt(v string) string {
	loc := dnsInShippedNamespace.FindStringIndex(v)
	if loc == nil {
		return v
	}
	start := strings.LastIndexByte(v[:loc[0]], '\n') + 1
	end := strings.IndexByte(v[loc[0]:], '\n')
	if end < 0 {
		return strings.TrimSpace(v[start:])
	}
	return strings.TrimSpace(v[start : loc[0]+end])
}
