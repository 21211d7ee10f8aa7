// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/components/backendsconverter"
	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// everyRender is each root, overlay and component the install guide offers, as a
// user's kustomization builds it: together they hold every object and reference
// a doc can name.
func everyRender(t *testing.T) map[string]string {
	t.Helper()
	base, agent := manifest.Dir("base"), manifest.Dir("agent")
	renders := map[string]string{"base": base, "agent": agent, "fluent-bit": manifest.Dir("fluent-bit"),
		"platform": manifest.Dir("overlays", "platform"), "platform-fluent-bit": manifest.Dir("overlays", "platform-fluent-bit"),
		"cert-manager": manifest.Dir("cert-manager"), "trust-manager": manifest.Dir("cert-manager", "trust-manager")}
	for _, o := range manifest.Overlays() {
		renders[o] = manifest.Dir("overlays", o)
	}
	for name, dir := range manifest.FederationOverlays(t) {
		renders[name] = dir
	}
	for _, c := range []string{"alerts", "backend-default-mtls", "backends", "cert-manager", "priority-class", "servicemonitor"} {
		renders["components/"+c] = manifest.OverlayOf(t, []string{base, agent}, manifest.Dir("components", c))
	}
	return renders
}

// generatedHash is the suffix kustomize gives a generated ConfigMap or Secret.
var generatedHash = regexp.MustCompile(`-[a-z0-9]{10}$`)

// rendered is what the manifests hold: every string value (object names, the
// Secrets and ConfigMaps they reference, paths, config files), and each
// Service's ports by "name.namespace".
type rendered struct {
	values   []string
	names    map[string]bool
	services map[string]map[string]bool
}

func renderAll(t *testing.T) rendered {
	t.Helper()
	r := rendered{names: map[string]bool{}, services: map[string]map[string]bool{}}
	for _, dir := range everyRender(t) {
		for _, doc := range manifest.Docs(t, dir) {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatal(err)
			}
			walk(obj, "", func(path, v string) {
				r.values = append(r.values, v)
				r.names[v] = true
				if strings.HasSuffix(path, "metadata.name") {
					r.names[generatedHash.ReplaceAllString(v, "")] = true
				}
			})
			var svc struct {
				Kind     string
				Metadata struct{ Name, Namespace string }
				Spec     struct{ Ports []struct{ Port int } }
			}
			manifest.UnmarshalLoose(t, doc, &svc)
			if svc.Kind == "Service" {
				key := svc.Metadata.Name + "." + svc.Metadata.Namespace
				if r.services[key] == nil {
					r.services[key] = map[string]bool{}
				}
				for _, p := range svc.Spec.Ports {
					r.services[key][strconv.Itoa(p.Port)] = true
				}
			}
		}
	}
	return r
}

var (
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	// An object of ours by name: otelcol-relay and its hyphenated children.
	objectName = regexp.MustCompile(`^otelcol-relay(-[a-z0-9]+)*$`)
	// A Service's in-cluster address: name.namespace[.svc[.cluster.local]][:port][/path].
	serviceAddr = regexp.MustCompile(`^([a-z0-9-]+)\.([a-z0-9-]+)(\.svc(\.cluster\.local)?)?(:([0-9]+))?(/\S*)?$`)
	// A file or directory of ours that a pod reads or writes.
	podPath = regexp.MustCompile(`^/(etc/otelcol-relay|var/lib/otelcol-relay|var/run/secrets/otelcol-relay|usr/share/doc/otelcol-relay|certs)(/[A-Za-z0-9._-]+)*/?$`)
)

// TestDeployDocsNameWhatTheManifestsHold reads the user docs' code spans and
// checks each that names part of an install against the rendered manifests: an
// object name of ours (otelcol-relay-*) is an object or a reference in some
// render; a Service address in a shipped namespace is a Service there, with the
// port named; a path of ours (/etc/otelcol-relay, /var/lib/otelcol-relay,
// /certs, ...) is in a rendered value (a mount, a config file) or the image's
// Dockerfile. A doc that renames what the manifests do not fails, naming the line.
func TestDeployDocsNameWhatTheManifestsHold(t *testing.T) {
	r := renderAll(t)
	r.values = append(r.values, readDoc(t, "Dockerfile"))
	// A recipe configures the paths it reads by default (a token file); the
	// user mounts them as docs/recipes.md shows.
	r.values = append(r.values, recipeTexts(t)...)
	shippedNS := map[string]bool{}
	for key := range r.services {
		_, ns, _ := strings.Cut(key, ".")
		shippedNS[ns] = true
	}
	checked := 0
	for _, doc := range userDocs(t) {
		for n, line := range strings.Split(readDoc(t, doc), "\n") {
			for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
				span := m[1]
				if msg := r.check(span, shippedNS); msg != "" {
					t.Errorf("%s:%d: `%s` %s", doc, n+1, span, msg)
				} else if objectName.MatchString(span) || serviceAddr.MatchString(span) || podPath.MatchString(span) {
					checked++
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no code span named an object, a Service address or a path: the parser is wrong")
	}
	t.Logf("%d names, addresses and paths in the docs found in the manifests", checked)
}

// check is why span is not what the manifests hold, or "" if it is (or is not
// something the manifests decide).
func (r rendered) check(span string, shippedNS map[string]bool) string {
	switch {
	case objectName.MatchString(span):
		if !r.names[span] {
			return "names no object and no reference in any render of deploy/"
		}
	case serviceAddr.MatchString(span):
		m := serviceAddr.FindStringSubmatch(span)
		if !shippedNS[m[2]] || (m[3] == "" && m[6] == "") {
			return "" // another namespace's, or a dotted word that is no address
		}
		ports, ok := r.services[m[1]+"."+m[2]]
		switch {
		case !ok:
			return fmt.Sprintf("names Service %s in namespace %s, which no render has", m[1], m[2])
		case m[6] != "" && !ports[m[6]]:
			return fmt.Sprintf("names port %s of Service %s, which serves no such port", m[6], m[1])
		}
	case podPath.MatchString(span):
		for _, v := range r.values {
			if strings.Contains(v, span) {
				return ""
			}
		}
		return "is a path no render mounts or configures"
	}
	return ""
}

// componentID is a component ID in a code span: type/name.
var componentID = regexp.MustCompile(`^([a-z][a-z0-9_]*)/([A-Za-z0-9_.-]+)$`)

// snakeType is a type the collector's way (k8s_attributes, otlp_http_wire): a
// code span type/name with one is a component ID, not a path or a media type.
var snakeType = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)+$`)

// TestDeployDocsNameComponentsTheBinaryHas: a `type/name` code span in a user
// doc whose type is the collector's snake_case, or a type the built binary has,
// is a component ID; its type must be one the binary has (its `components`
// command), and the ID one a shipped config or a config/ example defines (or a
// placeholder: a one-letter name), so a renamed or dropped component leaves no
// doc behind.
func TestDeployDocsNameComponentsTheBinaryHas(t *testing.T) {
	out, err := exec.Command(e2e.Binary(t), "components").Output()
	if err != nil {
		t.Fatalf("otelcol-relay components: %v", err)
	}
	var list map[string]any
	if err := yaml.Unmarshal(out, &list); err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	for kind, v := range list {
		entries, _ := v.([]any)
		for _, e := range entries {
			if m, ok := e.(map[string]any); ok && kind != "buildinfo" {
				types[fmt.Sprint(m["name"])] = true
			}
		}
	}
	if len(types) == 0 {
		t.Fatalf("otelcol-relay components lists none:\n%s", out)
	}
	texts := renderAll(t).values
	examples, _ := filepath.Glob(filepath.Join(e2e.RepoRoot(), "config", "*.yaml"))
	more, _ := filepath.Glob(filepath.Join(e2e.RepoRoot(), "config", "*", "*.yaml"))
	for _, f := range append(examples, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	// What a recipe's backends: list becomes is defined by it too (the
	// forward connectors, auth extensions and route filters it expands into).
	for _, f := range more {
		if exp := expandedBackends(t, f); exp != "" {
			texts = append(texts, exp)
		}
	}
	configs := strings.Join(texts, "\n")
	checked := 0
	for _, doc := range userDocs(t) {
		for n, line := range strings.Split(readDoc(t, doc), "\n") {
			for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
				id := componentID.FindStringSubmatch(m[1])
				if len(id) < 3 || (!snakeType.MatchString(id[1]) && !types[id[1]]) {
					continue
				}
				checked++
				switch {
				case !types[id[1]]:
					t.Errorf("%s:%d: `%s` names component type %s, which the binary does not have", doc, n+1, m[1], id[1])
				case len(id[2]) > 1 && !strings.Contains(configs, m[1]+":") && !strings.Contains(configs, m[1]+"\""):
					// (a one-letter name, `otlp_grpc/x`, is a placeholder)
					t.Errorf("%s:%d: `%s`: no shipped config nor config/ example defines it", doc, n+1, m[1])
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no code span named a component: the parser is wrong")
	}
	t.Logf("%d component IDs in the docs, each of a type the binary has", checked)
}

func recipeTexts(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(e2e.RepoRoot(), "config", "recipes", "*.yaml"))
	var out []string
	for _, f := range files {
		out = append(out, readConfig(t, f))
	}
	return out
}

// expandedBackends is config file f's backends: list as backendsconverter
// expands it over a gateway's three pipelines, in YAML; "" without a list.
func expandedBackends(t *testing.T, f string) string {
	t.Helper()
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(readConfig(t, f)), &cfg); err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	if _, ok := cfg[backendsconverter.BackendsKey]; !ok {
		return ""
	}
	cfg["service"] = map[string]any{"pipelines": map[string]any{"logs": map[string]any{}, "metrics": map[string]any{}, "traces": map[string]any{}}}
	// Header values come from Secrets: any value expands the list.
	if err := backendsconverter.Expand(cfg, func(string) (string, bool) { return "x", true }); err != nil {
		t.Fatalf("%s: backends: %v", f, err)
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
