// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// Proofs for the relay (OTLP intake, scaled by an HPA, drained on scale-down) and
// federation (one pod per shard, where an overlay adds it), as every overlay renders
// them. The upgrade from the single gateway is in deploy_upgrade_test.go.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// collectorConfig is the part of a collector config these checks read.
type collectorConfig struct {
	Receivers  map[string]any `json:"receivers"`
	Processors map[string]any `json:"processors"`
	Backends   []any          `json:"backends"`
	Service    struct {
		Pipelines map[string]struct {
			Receivers []string `json:"receivers"`
			Exporters []string `json:"exporters"`
		} `json:"pipelines"`
	} `json:"service"`
}

// configOf merges nothing: it returns each --config file of the pod's container,
// parsed, from the rendered ConfigMaps.
func configOf(t *testing.T, r manifest.Rendered, spec corev1.PodSpec) []collectorConfig {
	t.Helper()
	args, _ := podCommand(t, r, spec, "otelcol-relay-0", "0")
	var out []collectorConfig
	for i, a := range args {
		if a != "--config" {
			continue
		}
		raw, err := os.ReadFile(args[i+1])
		if err != nil {
			t.Fatal(err)
		}
		var c collectorConfig
		if err := yaml.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%s: %v", args[i+1], err)
		}
		out = append(out, c)
	}
	return out
}

func receiverTypes(cs []collectorConfig) []string {
	var out []string
	for _, c := range cs {
		for id := range c.Receivers {
			typ, _, _ := strings.Cut(id, "/")
			out = append(out, typ)
		}
	}
	sort.Strings(out)
	return out
}

// TestDeployRelayAndFederation checks, in every overlay as kustomize renders it
// (and base with the federation component, sharded, over plain http, with the
// default backend's mutual TLS), what the two workloads must be; federation only
// in the overlays that add it (tigera), never in base, aks or example-backend:
//   - relay: the StatefulSet an autoscaling/v2 HPA scales (minReplicas 2, a slow
//     scale-down), no replicas in the manifest (the HPA owns them), a CPU request
//     the utilization target can mean something against, PVCs retained on
//     scale-down, the preStop drain and the drain-aware readiness on the drain
//     port, spread over nodes and zones, a PDB of maxUnavailable 1, and a config
//     without any Prometheus receiver;
//   - federation: a fixed replica count equal to the number of shard selectors,
//     a config with only the prometheus receiver, pods no relay selector (the
//     StatefulSet's, the Services', the PDB's) picks up.
func TestDeployRelayAndFederation(t *testing.T) {
	dirs := manifest.FederationOverlays(t)
	withFederation := map[string]bool{}
	for name := range dirs {
		withFederation[name] = true
	}
	for _, o := range append([]string{"../base"}, manifest.Overlays()...) {
		if _, ok := dirs[o]; !ok {
			dirs[o] = manifest.Dir("overlays", o)
		}
	}
	for name, dir := range dirs {
		t.Run(filepath.Base(name), func(t *testing.T) {
			r := manifest.Render(t, dir)
			if len(r.HPAs) != 1 {
				t.Fatalf("%d HorizontalPodAutoscalers, want 1 (the relay's)", len(r.HPAs))
			}
			hpa := r.HPAs[0]
			var relay, federation *appsv1.StatefulSet
			for i := range r.StatefulSets {
				s := &r.StatefulSets[i]
				switch {
				case hpa.Spec.ScaleTargetRef.Kind == "StatefulSet" && s.Name == hpa.Spec.ScaleTargetRef.Name:
					relay = s
				case s.Spec.Template.Labels["app.kubernetes.io/component"] == "federation":
					federation = s
				}
			}
			if !withFederation[name] {
				if relay == nil || federation != nil || len(r.StatefulSets) != 1 {
					t.Fatalf("want the HPA's relay StatefulSet only (federation is a component this overlay does not add); HPA targets %+v, StatefulSets %d", hpa.Spec.ScaleTargetRef, len(r.StatefulSets))
				}
				checkRelay(t, r, relay)
				checkHPA(t, hpa)
				for _, cm := range r.ConfigMaps {
					if strings.HasPrefix(cm.Name, "otelcol-relay-federation") {
						t.Errorf("ConfigMap %s without the federation StatefulSet", cm.Name)
					}
				}
				return
			}
			if relay == nil || federation == nil || len(r.StatefulSets) != 2 {
				t.Fatalf("want the HPA's relay StatefulSet and a federation one; HPA targets %+v, StatefulSets %d", hpa.Spec.ScaleTargetRef, len(r.StatefulSets))
			}
			checkRelay(t, r, relay)
			checkHPA(t, hpa)
			checkFederation(t, r, federation)

			var relayPDB int
			for _, p := range r.PDBs {
				if manifest.Selects(p.Spec.Selector, federation.Spec.Template.Labels) && manifest.Selects(p.Spec.Selector, relay.Spec.Template.Labels) {
					t.Errorf("PDB %s covers relay and federation pods together", p.Name)
				}
				if manifest.Selects(p.Spec.Selector, relay.Spec.Template.Labels) {
					relayPDB++
					if p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.String() != "1" || p.Spec.MinAvailable != nil {
						t.Errorf("relay PDB %s: maxUnavailable %v minAvailable %v, want maxUnavailable 1 (N-1 whatever N the HPA chose)", p.Name, p.Spec.MaxUnavailable, p.Spec.MinAvailable)
					}
				}
			}
			if relayPDB != 1 {
				t.Errorf("%d PDBs select the relay's pods, want 1", relayPDB)
			}
			if manifest.Selects(relay.Spec.Selector, federation.Spec.Template.Labels) || manifest.Selects(federation.Spec.Selector, relay.Spec.Template.Labels) {
				t.Error("the relay's and federation's StatefulSet selectors overlap")
			}
			for _, svc := range r.Services {
				if len(svc.Spec.Selector) > 0 && manifest.Selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, relay.Spec.Template.Labels) &&
					manifest.Selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, federation.Spec.Template.Labels) {
					t.Errorf("Service %s sends to relay and federation pods alike", svc.Name)
				}
			}
		})
	}
}

func checkRelay(t *testing.T, r manifest.Rendered, s *appsv1.StatefulSet) {
	t.Helper()
	if s.Spec.Replicas != nil {
		t.Errorf("relay StatefulSet sets replicas %d: every apply would reset what the HPA chose", *s.Spec.Replicas)
	}
	if p := s.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("relay PVC retention %+v, want Retain on scale-down and delete (a removed ordinal's leftover queue is delivered when it returns)", p)
	}
	spec := s.Spec.Template.Spec
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g != 120 {
		t.Errorf("relay terminationGracePeriodSeconds %v, want 120 (the drain takes up to ~110 s)", g)
	}
	c := spec.Containers[0]
	if cpu := c.Resources.Requests.Cpu(); cpu.Cmp(resource.MustParse("500m")) < 0 {
		t.Errorf("relay CPU request %s: too small for a utilization target to mean anything (bench: ~84 CPU-s per million records)", cpu)
	}
	if !c.Resources.Limits.Cpu().IsZero() {
		t.Errorf("relay CPU limit %s: throttling a relay only fills its queue", c.Resources.Limits.Cpu())
	}
	var drainPort int32
	for _, p := range c.Ports {
		if p.Name == "drain" {
			drainPort = p.ContainerPort
		}
	}
	if drainPort != 13134 {
		t.Errorf("relay drain port %d, want a port named drain on 13134 (RELAY_DRAIN_PORT's default)", drainPort)
	}
	if l := c.Lifecycle; l == nil || l.PreStop == nil || l.PreStop.HTTPGet == nil || l.PreStop.HTTPGet.Path != "/drain" || l.PreStop.HTTPGet.Port.String() != "drain" {
		t.Errorf("relay preStop %+v, want httpGet /drain on the drain port", l)
	}
	checkDrainGuard(t, c, spec.TerminationGracePeriodSeconds)
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/ready" || p.HTTPGet.Port.String() != "drain" {
		t.Errorf("relay readiness %+v, want httpGet /ready on the drain port (unready while draining)", p)
	}
	keys := map[string]bool{}
	for _, tsc := range spec.TopologySpreadConstraints {
		if !manifest.Selects(tsc.LabelSelector, s.Spec.Template.Labels) {
			t.Errorf("topology spread on %s does not select the relay's pods", tsc.TopologyKey)
		}
		keys[tsc.TopologyKey] = true
	}
	if !keys["kubernetes.io/hostname"] || !keys["topology.kubernetes.io/zone"] {
		t.Errorf("relay spreads over %v, want nodes and zones", keys)
	}
	if got := receiverTypes(configOf(t, r, spec)); strings.Contains(fmt.Sprint(got), "prometheus") {
		t.Errorf("relay receivers %v: a relay replica must not scrape (N replicas, N copies)", got)
	}
}

func checkHPA(t *testing.T, h autoscalingv2.HorizontalPodAutoscaler) {
	t.Helper()
	if m := h.Spec.MinReplicas; m == nil || *m != 2 {
		t.Errorf("HPA minReplicas %v, want 2", m)
	}
	if h.Spec.MaxReplicas < 2 {
		t.Errorf("HPA maxReplicas %d", h.Spec.MaxReplicas)
	}
	if len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Resource == nil || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU ||
		h.Spec.Metrics[0].Resource.Target.AverageUtilization == nil {
		t.Errorf("HPA metrics %+v, want CPU utilization", h.Spec.Metrics)
	}
	b := h.Spec.Behavior
	if b == nil || b.ScaleDown == nil || b.ScaleDown.StabilizationWindowSeconds == nil || *b.ScaleDown.StabilizationWindowSeconds < 300 {
		t.Fatalf("HPA scale-down %+v, want a stabilization window of at least 5 minutes", b)
	}
	for _, p := range b.ScaleDown.Policies {
		if p.Type != "Pods" || p.Value != 1 || p.PeriodSeconds < 120 {
			t.Errorf("HPA scale-down policy %+v, want one pod at a time, no faster than a drain", p)
		}
	}
}

func checkFederation(t *testing.T, r manifest.Rendered, s *appsv1.StatefulSet) {
	t.Helper()
	if s.Spec.Replicas == nil {
		t.Fatal("federation StatefulSet without replicas: it must be fixed, one pod per shard")
	}
	spec := s.Spec.Template.Spec
	shards := map[int]bool{}
	for _, from := range spec.Containers[0].EnvFrom {
		if from.ConfigMapRef == nil {
			continue // the backends' header Secret (components/federation-backends)
		}
		for k := range r.ConfigMaps[from.ConfigMapRef.Name].Data {
			if n, ok := manifest.ShardIndex(k); ok {
				shards[n] = true
			}
		}
	}
	for i := 0; i < int(*s.Spec.Replicas); i++ {
		if !shards[i] {
			t.Errorf("federation has %d replicas but no selector RELAY_FEDERATION_MATCH_%d", *s.Spec.Replicas, i)
		}
	}
	if len(shards) != int(*s.Spec.Replicas) {
		t.Errorf("federation: %d shard selectors for %d replicas; a selector without its pod is never federated", len(shards), *s.Spec.Replicas)
	}
	cs := configOf(t, r, spec)
	if got := receiverTypes(cs); fmt.Sprint(got) != "[prometheus]" {
		t.Errorf("federation receivers %v, want only the prometheus receiver", got)
	}
	// Each --config file on its own: a backends list's file adds no processor.
	types := false
	for _, c := range cs {
		for name := range c.Service.Pipelines {
			if !strings.HasPrefix(name, "metrics") {
				t.Errorf("federation pipeline %s: federation carries metrics only", name)
			}
		}
		_, ok := c.Processors["federation_types"]
		types = types || ok
	}
	if !types {
		t.Error("federation config without federation_types")
	}
	if len(s.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("federation: %d volumeClaimTemplates, want its persistent queue's", len(s.Spec.VolumeClaimTemplates))
	}
	if p := spec.Containers[0].StartupProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Port.String() != "health" {
		t.Errorf("federation startupProbe %+v, want httpGet on the health port (a restart on a full queue outlasts the liveness probe)", p)
	}
	checkMountsAreRead(t, "federation", s)
}

// checkMountsAreRead: every volume the workload's container mounts is read, named
// by a file variable of its environment (or the config's folder in its args, or its
// queue claim), and every file variable lies in a mount. A mount nothing reads is a
// Secret or ConfigMap the user must create for nothing, and the pod does not start
// without it. The one exception is a fixed place of a `backends:` list's material
// (components/federation-backends): an optional object, so the pod starts without
// it, mounted only beside a --config backends.yaml whose entries name its files.
func checkMountsAreRead(t *testing.T, name string, s *appsv1.StatefulSet) {
	t.Helper()
	c := s.Spec.Template.Spec.Containers[0]
	list := slices.ContainsFunc(c.Args, func(a string) bool {
		p, ok := strings.CutPrefix(a, "--config=")
		return ok && filepath.Base(p) == "backends.yaml"
	})
	optional := map[string]bool{}
	for _, v := range s.Spec.Template.Spec.Volumes {
		optional[v.Name] = (v.ConfigMap != nil && v.ConfigMap.Optional != nil && *v.ConfigMap.Optional) ||
			(v.Secret != nil && v.Secret.Optional != nil && *v.Secret.Optional)
	}
	claims := map[string]bool{}
	for _, v := range s.Spec.VolumeClaimTemplates {
		claims[v.Name] = true
	}
	read := func(dir string) bool {
		for _, e := range c.Env {
			if strings.HasPrefix(e.Value, dir+"/") {
				return true
			}
		}
		for _, a := range c.Args {
			if strings.HasPrefix(strings.TrimPrefix(a, "--config="), dir+"/") {
				return true
			}
		}
		return false
	}
	for _, m := range c.VolumeMounts {
		if list && optional[m.Name] {
			continue
		}
		if !claims[m.Name] && !read(m.MountPath) {
			t.Errorf("%s mounts volume %s at %s, but no file variable or --config reads from it", name, m.Name, m.MountPath)
		}
	}
	for _, e := range c.Env {
		if !strings.HasPrefix(e.Value, "/") {
			continue
		}
		in := false
		for _, m := range c.VolumeMounts {
			in = in || strings.HasPrefix(e.Value, m.MountPath+"/")
		}
		if !in {
			t.Errorf("%s: %s=%s is in no mounted volume", name, e.Name, e.Value)
		}
	}
}

// resumeAfterDefault is drain::resume_after as the relay's config sets it.
var resumeAfterDefault = regexp.MustCompile(`resume_after: \$\{env:RELAY_DRAIN_RESUME_AFTER:-([^}]+)\}`)

// checkDrainGuard: the relay takes GET /drain only from the node, so the hook
// must come from the node to the pod IP (no host), with MY_HOST_IP the node's
// address; and a drain must not resume before the pod's grace period is over,
// or a slow scale-down would take traffic again just before SIGTERM.
func checkDrainGuard(t *testing.T, c corev1.Container, grace *int64) {
	t.Helper()
	if l := c.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.HTTPGet != nil && l.PreStop.HTTPGet.Host != "" {
		t.Errorf("relay preStop host %q: want none (the pod IP, called from the node)", l.PreStop.HTTPGet.Host)
	}
	hostIP, resume := false, ""
	for _, e := range c.Env {
		switch e.Name {
		case "MY_HOST_IP":
			hostIP = e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.hostIP"
		case "RELAY_DRAIN_RESUME_AFTER":
			resume = e.Value
		}
	}
	if !hostIP {
		t.Error("relay env MY_HOST_IP: want status.hostIP, the source drain::allowed_sources admits")
	}
	if resume == "" {
		b, err := os.ReadFile(filepath.Join(e2e.RepoRoot(), "config", "gateway.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		m := resumeAfterDefault.FindSubmatch(b)
		if m == nil {
			t.Fatal("config/gateway.yaml sets no drain::resume_after default (RELAY_DRAIN_RESUME_AFTER)")
		}
		resume = string(m[1])
	}
	d, err := time.ParseDuration(resume)
	if err != nil || grace == nil || d <= time.Duration(*grace)*time.Second {
		t.Errorf("drain::resume_after %q (%v): want longer than terminationGracePeriodSeconds %v", resume, err, grace)
	}
}
