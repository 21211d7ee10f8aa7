// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// What the docs say about the data flow, against the manifests that make it.

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// userDocs are the Markdown files a user reads, tracked or new (not ignored);
// docs/decisions keep the alternatives that were turned down, in their own words.
func userDocs(t *testing.T) []string {
	t.Helper()
	var docs []string
	for _, f := range gitFiles(t, "--cached", "--others", "--exclude-standard", "*.md") {
		if strings.HasPrefix(f, "docs/decisions/") || strings.HasPrefix(f, "bench/results/") || strings.HasPrefix(f, "CHANGELOG") {
			continue
		}
		docs = append(docs, f)
	}
	return docs
}

// gitFiles is what `git ls-files args...` lists, relative to the repository root.
func gitFiles(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"ls-files"}, args...)...)
	cmd.Dir = e2e.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

func readDoc(t *testing.T, doc string) string {
	t.Helper()
	return readConfig(t, filepath.Join(e2e.RepoRoot(), doc))
}

// drainOnSIGTERM is a line that has the queue drained by SIGTERM.
var drainOnSIGTERM = regexp.MustCompile(`(?i)\bdrain\w*\b[^.]*\bon SIGTERM\b`)

// TestDeployDrainIsThePreStopHook: the relay drains in its preStop hook, before
// the kubelet sends SIGTERM; SIGTERM alone stops the receivers and leaves the
// queue on the volume. The docs say so: the architecture's data flow names the
// hook, and no user doc has the drain run on SIGTERM.
func TestDeployDrainIsThePreStopHook(t *testing.T) {
	sts := manifest.Render(t, manifest.Dir("base")).StatefulSetOf(t, "gateway")
	c := sts.Spec.Template.Spec.Containers[0]
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.HTTPGet == nil || c.Lifecycle.PreStop.HTTPGet.Path != "/drain" {
		t.Fatalf("the relay's preStop hook is %+v, not GET /drain: update the docs with it", c.Lifecycle)
	}
	if arch := readDoc(t, "docs/architecture.md"); !strings.Contains(arch, "preStop hook (GET /drain)") {
		t.Error("docs/architecture.md's data flow does not name the preStop hook (GET /drain) that drains the relay")
	}
	for _, doc := range userDocs(t) {
		for i, line := range strings.Split(readDoc(t, doc), "\n") {
			if drainOnSIGTERM.MatchString(line) {
				t.Errorf("%s:%d has the drain run on SIGTERM; the preStop hook runs it before SIGTERM: %q", doc, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestDeployFederationReachesTheDefaultBackendAndItsOwnList: federation exports to
// the default backend, plus each entry of its own backends list
// (components/federation-backends), and never to the relay's list: in the tigera
// overlay, which lists backends for the relay only (components/backends), it
// reaches the default backend alone; with a list of its own beside the relay's,
// print-config of federation has exactly the default and one exporter per entry
// of its list, and the relay's has its entries and none of federation's. The
// data flow says so.
func TestDeployFederationReachesTheDefaultBackendAndItsOwnList(t *testing.T) {
	r := manifest.Render(t, manifest.Dir("overlays", "tigera"))
	sts := r.StatefulSetOf(t, "federation")
	seen := 0
	for _, cfg := range configOf(t, r, sts.Spec.Template.Spec) {
		if cfg.Backends != nil {
			t.Error("tigera: federation's config reads a backends: list, and the overlay gives it none (components/backends is the relay's)")
		}
		for name, p := range cfg.Service.Pipelines {
			for _, e := range p.Exporters {
				seen++
				if !strings.HasSuffix(e, "/default") {
					t.Errorf("tigera: federation pipeline %s exports to %s, not the default backend, without a list of its own", name, e)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("federation's config has no exporter in a pipeline")
	}

	r = manifest.Render(t, federationBackendsOverlay(t, twoFederationBackends, relayOnlyBackend))
	pod := inPod(t)
	fed, _ := printConfig(t, r, r.StatefulSetOf(t, "federation").Spec.Template.Spec, pod)
	own := listedExporters(t, twoFederationBackends)
	want := append([]string{"otlp_http/default"}, own...)
	slices.Sort(want)
	for name, p := range fed.Service.Pipelines {
		got := slices.Sorted(slices.Values(p.Exporters))
		if !slices.Equal(got, want) {
			t.Errorf("federation pipeline %s exports to %v, want the default backend and its own list's: %v", name, got, want)
		}
	}
	relay, _ := printConfig(t, r, r.StatefulSetOf(t, "gateway").Spec.Template.Spec, pod)
	relayOwn := listedExporters(t, relayOnlyBackend)
	for name, p := range relay.Service.Pipelines {
		for _, e := range relayOwn {
			if !slices.Contains(p.Exporters, e) {
				t.Errorf("relay pipeline %s exports to %v, not to its own list's %s", name, p.Exporters, e)
			}
		}
		for _, e := range own {
			if slices.Contains(p.Exporters, e) {
				t.Errorf("relay pipeline %s exports to %s, an entry of federation's list", name, e)
			}
		}
	}

	flow := 0
	for _, l := range strings.Split(readDoc(t, "docs/architecture.md"), "\n") {
		if !strings.Contains(l, "──/federate──") {
			continue
		}
		flow++
		if !strings.Contains(l, "default backend") || !strings.Contains(l, "own backends: list") {
			t.Errorf("docs/architecture.md's federation flow %q does not say it reaches the default backend and its own backends: list", strings.TrimSpace(l))
		}
	}
	if flow == 0 {
		t.Error("docs/architecture.md's data flow has no federation line (──/federate──)")
	}
}
