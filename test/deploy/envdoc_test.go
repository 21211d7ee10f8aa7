// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// documentedVar is a variable name as deploy/docs/environment.md writes it: NAME,
// NAME_{A,B}_FILE for several, NAME_<n> for a numbered family, NAME=value.
var documentedVar = regexp.MustCompile("`([A-Z][A-Z0-9_]*(?:\\{[A-Z0-9,]+\\}[A-Z0-9_]*)?(?:<n>)?)(?:=[^`]*)?`")

// documentedEnv reads deploy/docs/environment.md, "Environment the manifests set": for each
// workload paragraph (it starts with the workload's name), the variables it names,
// as patterns.
func documentedEnv(t *testing.T) map[string][]*regexp.Regexp {
	t.Helper()
	raw, err := os.ReadFile(e2e.RepoRoot() + "/deploy/docs/environment.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "# Environment the manifests set\n")
	if !ok {
		t.Fatal("deploy/docs/environment.md has no section Environment the manifests set")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	out := map[string][]*regexp.Regexp{}
	for _, para := range strings.Split(section, "\n\n") {
		workload, _, _ := strings.Cut(strings.TrimSpace(para), " ")
		if workload != "Relay" && workload != "Federation" && workload != "Agent" {
			continue
		}
		for _, m := range documentedVar.FindAllStringSubmatch(para, -1) {
			name := strings.ReplaceAll(m[1], "<n>", `\d+`)
			if b := strings.Index(name, "{"); b >= 0 {
				e := strings.Index(name, "}")
				name = name[:b] + "(" + strings.ReplaceAll(name[b+1:e], ",", "|") + ")" + name[e+1:]
			}
			out[workload] = append(out[workload], regexp.MustCompile("^"+name+"$"))
		}
	}
	return out
}

// containerEnv is the names a container's environment gets from the manifest:
// env entries and the keys of envFrom ConfigMaps (an optional Secret's keys are
// the user's own header variables, named in its own section).
func containerEnv(t *testing.T, r manifest.Rendered, c corev1.Container) []string {
	t.Helper()
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
	}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		cm, ok := r.ConfigMaps[from.ConfigMapRef.Name]
		if !ok {
			t.Fatalf("envFrom ConfigMap %s is not rendered", from.ConfigMapRef.Name)
		}
		for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
			names = append(names, from.Prefix+k)
		}
	}
	return names
}

// TestDeployEnvironmentIsDocumented: every variable the relay, federation and the
// agent get from the shipped overlays and components is in deploy/docs/environment.md,
// "Environment the manifests set" under its workload, and every variable named
// there is set by one of them. (overlays/example-backend's own backend variables
// are in its section.)
func TestDeployEnvironmentIsDocumented(t *testing.T) {
	dirs := []string{manifest.Dir("base"), manifest.Dir("agent"), manifest.Dir("overlays", "aks"),
		manifest.Dir("overlays", "platform"),
		manifest.OverlayOf(t, []string{manifest.Dir("base")}, manifest.Dir("components", "backend-default-mtls"))}
	for _, d := range manifest.FederationOverlays(t) {
		dirs = append(dirs, d)
	}
	set := map[string]map[string]bool{"Relay": {}, "Federation": {}, "Agent": {}}
	add := func(workload string, names []string) {
		for _, n := range names {
			set[workload][n] = true
		}
	}
	for _, d := range dirs {
		r := manifest.Render(t, d)
		for _, s := range r.StatefulSets {
			workload := map[string]string{"gateway": "Relay", "federation": "Federation"}[s.Spec.Template.Labels["app.kubernetes.io/component"]]
			if workload == "" {
				t.Fatalf("%s: StatefulSet %s is neither the relay nor federation", d, s.Name)
			}
			add(workload, containerEnv(t, r, s.Spec.Template.Spec.Containers[0]))
		}
		for _, ds := range r.DaemonSets {
			add("Agent", containerEnv(t, r, ds.Spec.Template.Spec.Containers[0]))
		}
	}
	doc := documentedEnv(t)
	for _, workload := range []string{"Relay", "Federation", "Agent"} {
		for _, name := range slices.Sorted(maps.Keys(set[workload])) {
			if !slices.ContainsFunc(doc[workload], func(re *regexp.Regexp) bool { return re.MatchString(name) }) {
				t.Errorf("%s: the manifests set %s, which deploy/docs/environment.md (\"Environment the manifests set\") does not name", workload, name)
			}
		}
		for _, re := range doc[workload] {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(set[workload])), re.MatchString) {
				t.Errorf("%s: deploy/docs/environment.md names %s, which no manifest sets", workload, strings.Trim(re.String(), "^$"))
			}
		}
	}
}
