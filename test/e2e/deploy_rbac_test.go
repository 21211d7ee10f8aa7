// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

// The ServiceAccounts the manifests create can do exactly what the components
// need, asked of a real kube-apiserver.

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// TestKubeDeployRBAC: as each ServiceAccount (relay, federation, agent), `kubectl
// auth can-i --list` shows exactly the rules the components need, and every write
// and every secret read is denied.
func TestKubeDeployRBAC(t *testing.T) {
	k := e2e.StartKube(t)
	installServiceMonitorCRD(t, k)
	for _, o := range manifest.Overlays() {
		if o == "tigera" {
			continue // its one extra rule (services/proxy) is checked by TestKubeTigeraOverlay
		}
		k.MustKubectl(t, "apply", "--server-side", "-k", manifest.Dir("overlays", o))
	}
	// Federation's ServiceAccount: the component as an overlay adds it.
	k.MustKubectl(t, "apply", "--server-side", "-k", manifest.FederationOverlay(t))

	// Only what the informers k8s_attributes starts need: pods, list and watch.
	informers := []string{"list", "watch"}
	cases := map[string]map[string][]string{
		"system:serviceaccount:otelcol-relay:otelcol-relay": {
			"pods": informers,
		},
		"system:serviceaccount:otelcol-relay:otelcol-relay-agent": {
			"pods": informers, "nodes/stats": {"get"},
		},
		// Federation reads nothing from the API server: no rule beyond what every
		// ServiceAccount has.
		"system:serviceaccount:otelcol-relay:otelcol-relay-federation": {},
	}
	for user, want := range cases {
		t.Run(user, func(t *testing.T) {
			got := canIList(t, k, user)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("rules for %s:\n got  %v\n want %v", user, got, want)
			}
			for _, q := range [][]string{
				{"get", "secrets"}, {"list", "secrets"}, {"watch", "secrets"}, {"get", "secrets", "-n", "kube-system"},
				{"get", "configmaps"}, {"create", "pods"}, {"update", "pods"}, {"patch", "pods"}, {"delete", "pods"},
				{"create", "pods/eviction"}, {"update", "nodes"}, {"patch", "nodes"}, {"delete", "namespaces"},
				{"create", "serviceaccounts/token"}, {"get", "nodes/proxy"}, {"create", "nodes/stats"},
				{"update", "replicasets.apps"}, {"create", "deployments.apps"}, {"*", "*"},
				{"get", "pods"}, {"list", "namespaces"}, {"list", "nodes"}, {"list", "replicasets.apps"},
			} {
				if allowed := canI(t, k, user, q...); allowed {
					t.Errorf("%s can %v; it must not", user, q)
				}
			}
			for res, verbs := range want {
				for _, v := range verbs {
					if !canI(t, k, user, v, res) {
						t.Errorf("%s cannot %s %s; the components need it", user, v, res)
					}
				}
			}
		})
	}
}

func canI(t *testing.T, k *e2e.Kube, user string, q ...string) bool {
	t.Helper()
	// kubectl reads "nodes/stats" as the node named stats: subresources go in a flag.
	args := []string{"auth", "can-i", "--as=" + user}
	for _, a := range q {
		if res, sub, ok := strings.Cut(a, "/"); ok && !strings.HasPrefix(a, "-") {
			args = append(args, res, "--subresource="+sub)
			continue
		}
		args = append(args, a)
	}
	out, err := k.Kubectl(t, args...)
	// The answer is the last line; warnings (e.g. "not namespace scoped") come first.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	switch strings.TrimSpace(lines[len(lines)-1]) {
	case "yes":
		return true
	case "no":
		return false
	}
	t.Fatalf("kubectl auth can-i %v: %v\n%s", q, err, out)
	return false
}

var verbsColumn = regexp.MustCompile(`\[([^\]]*)\]\s*$`)

// canIList returns the resource rules kubectl auth can-i --list shows for user,
// less those every ServiceAccount has from the default bootstrap policy (the rules
// of a ServiceAccount that nothing is bound to).
func canIList(t *testing.T, k *e2e.Kube, user string) map[string][]string {
	t.Helper()
	baseline := rulesOf(t, k, "system:serviceaccount:default:e2e-nobody")
	rules := map[string][]string{}
	for res, verbs := range rulesOf(t, k, user) {
		if fmt.Sprint(baseline[res]) != fmt.Sprint(verbs) {
			rules[res] = verbs
		}
	}
	return rules
}

func rulesOf(t *testing.T, k *e2e.Kube, user string) map[string][]string {
	t.Helper()
	out := k.MustKubectl(t, "auth", "can-i", "--list", "--as="+user)
	rules := map[string][]string{}
	for _, line := range strings.Split(out, "\n")[1:] {
		f := strings.Fields(line)
		m := verbsColumn.FindStringSubmatch(line)
		if len(f) < 2 || m == nil || strings.HasPrefix(f[0], "[") {
			continue // non-resource URL rules
		}
		verbs := strings.Fields(m[1])
		sort.Strings(verbs)
		rules[f[0]] = verbs
	}
	return rules
}

// TestKubeFluentBitRBAC: on a real API server, fluent-bit's ServiceAccount may
// get, list and watch pods and namespaces (the kubernetes filter's lookups) and
// nothing more.
func TestKubeFluentBitRBAC(t *testing.T) {
	k := e2e.StartKube(t)
	k.MustKubectl(t, "apply", "--server-side", "-k", manifest.Dir("fluent-bit"))
	ds := manifest.Render(t, manifest.Dir("fluent-bit")).DaemonSets[0]
	user := "system:serviceaccount:" + ds.Namespace + ":" + ds.Spec.Template.Spec.ServiceAccountName
	want := map[string][]string{"namespaces": {"get", "list", "watch"}, "pods": {"get", "list", "watch"}}
	if got := canIList(t, k, user); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rules for %s:\n got  %v\n want %v", user, got, want)
	}
	for res, verbs := range want {
		for _, v := range verbs {
			if !canI(t, k, user, v, res, "-n", "default") {
				t.Errorf("%s cannot %s %s in another namespace; the kubernetes filter looks up every node's pods", user, v, res)
			}
		}
	}
	for _, q := range [][]string{{"get", "secrets"}, {"list", "secrets", "-n", "kube-system"}, {"create", "pods"},
		{"patch", "pods"}, {"get", "nodes/proxy"}, {"get", "configmaps"}, {"delete", "namespaces"}} {
		if canI(t, k, user, q...) {
			t.Errorf("%s can %v; it must not", user, q)
		}
	}
}
