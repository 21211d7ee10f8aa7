// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRollingUpgrade changes the StatefulSet twice under a numbered load, as an
// operator does: a config change (variables the shipped config reads, set to what
// TestScaleInBackendDown and TestBackendCertificateRotation ask relayEnv for, so
// that they need no rollout of their own after this one), then a new release, as a
// platform team gets one (publishRelease: make release on a tag, pushed to a
// registry, pulled by containerd by digest), applied as deploy/docs/upgrade.md
// says, its `kubectl apply --server-side -k my-aks` run as it is written, my-aks's
// `images:` pinned to the release's digest. Each time every pod is replaced one at
// a time, each old pod drains in its preStop hook and exits 0, and the rollout's
// time is set against terminationGracePeriodSeconds; after the release every relay
// and agent pod runs the image by that digest. Every acknowledged number reaches
// the backend and no queue keeps anything. The config change is away from what
// runs, whatever a test before this one left: a change to the same value would
// roll nothing (and each release is a new commit, so a new digest).
func TestRollingUpgrade(t *testing.T) {
	install(t)
	pinTwoRelays(t)
	backendIP := podIP(t, backendNS, "app=backend")
	repo, digest := publishRelease(t)
	l := startLoad(t, "rollout", 2000, 4)
	time.Sleep(5 * time.Second)

	reload := "10s"
	if relayEnvNow(t)["RELAY_OTLP_TLS_RELOAD_INTERVAL"] == reload {
		reload = "9s"
	}
	rollout(t, "config change", drainedLog, func() {
		mustKubectl(t, "", "-n", relayNS, "set", "env", "statefulset/otelcol-relay", "-c", "otelcol-relay",
			"RELAY_OTLP_TLS_RELOAD_INTERVAL="+reload, drainTimeout)
	})
	// The new release as deploy/docs/upgrade.md has a user apply it: the image of
	// the kustomization moved to the release's digest, then the page's block as it
	// is written, in the directory that holds my-aks.
	dir := t.TempDir()
	writeMyAKSImage(t, filepath.Join(dir, "my-aks"), "newName: "+repo+"\n    digest: "+digest)
	ref := repo + "@" + digest
	rollout(t, "release "+ref+" (kubectl apply -k my-aks)", drainedLog, func() {
		sh(t, dir, nil, docBlock(t, "deploy/docs/upgrade.md", "## A new release, or a changed config", "apply your kustomization as you installed it"))
	})
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "daemonset/otelcol-relay-agent", "--timeout=5m")
	runsRelease(t, ref)

	_, sc := l.finish(t, backendIP)
	if sc.Missing != 0 {
		t.Errorf("%d acknowledged records never reached the backend (first: %v)", sc.Missing, sc.FirstMissing)
	}
	queuesEmpty(t)
}

// writeMyAKSImage writes dir as a user's my-aks: the install's own overlay with
// image, the fields of its `images:` entry (YAML lines, the later ones indented by
// four). It also pins the HPA at two replicas, as pinTwoRelays did with kubectl
// patch: an operator who pins it says so in the kustomization, or the apply stops
// at the conflict with the patch's field.
func writeMyAKSImage(t *testing.T, dir, image string) {
	t.Helper()
	if installOverlay == "" {
		t.Fatal("no install overlay: install(t) first")
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, installOverlay)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), []byte(fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
images:
  - name: %s
    %s
patches:
%s`, filepath.ToSlash(rel), imageName(t), image, twoReplicasPatch)))
}

// twoReplicasPatch is a kustomization's `patches:` entry that pins the HPA at
// two replicas, as pinTwoRelays does with kubectl patch.
const twoReplicasPatch = `  - target: {kind: HorizontalPodAutoscaler, name: otelcol-relay}
    patch: |-
      - op: replace
        path: /spec/minReplicas
        value: 2
      - op: replace
        path: /spec/maxReplicas
        value: 2
`

// rollout applies change and waits for the StatefulSet's rolling update, checking
// that every pod was replaced and that each old one's drain ended as drain says
// (podEnd.check) and it exited 0. It returns the new pods.
func rollout(t *testing.T, what, drain string, change func()) map[string]relayPod {
	t.Helper()
	before := waitRelays(t, 2)
	ends := map[string]*podEnd{}
	for name := range before {
		ends[name] = watchEnd(t, name)
	}
	start := time.Now()
	change()
	mustKubectl(t, "", "-n", relayNS, "rollout", "status", "statefulset/otelcol-relay", "--timeout=10m")
	took := time.Since(start)
	after := waitRelays(t, 2)
	grace := stsField(t, "{.spec.template.spec.terminationGracePeriodSeconds}")
	t.Logf("%s: rolled out over %d pods in %s (terminationGracePeriodSeconds %s per pod)", what, len(after), took.Round(time.Second), grace)
	for name, p := range after {
		if before[name].uid == p.uid {
			t.Errorf("%s: pod %s was not replaced", what, name)
		}
	}
	for name, e := range ends {
		e.check(t, name+" ("+what+")", drain)
	}
	return after
}

// queuesEmpty: every relay's sending queues drain to zero (nothing stranded).
func queuesEmpty(t *testing.T) {
	t.Helper()
	queuesEmptyIn(t, relayNS)
}

// queuesEmptyIn is queuesEmpty for the install in namespace ns.
func queuesEmptyIn(t *testing.T, ns string) {
	t.Helper()
	eventually(t, "every relay's queues empty", readyBudget, func() string {
		var busy []string
		for n, p := range relayPodsIn(t, ns) {
			v, err := selfMetric(p.ip, "otelcol_exporter_queue_size")
			if err != nil {
				return err.Error()
			}
			if v != 0 {
				busy = append(busy, fmt.Sprintf("%s %.0f", n, v))
			}
		}
		if len(busy) != 0 {
			return "queued: " + strings.Join(busy, ", ")
		}
		return ""
	})
}

// TestRelayPodKilled force-deletes a relay under load (no preStop, no grace): what
// it had acknowledged is in its queue on the PVC, and the replacement, on the same
// volume, delivers it. Duplicates are allowed (what was in flight is sent again)
// and counted; missing numbers are not.
func TestRelayPodKilled(t *testing.T) {
	install(t)
	before := pinTwoRelays(t)
	backendIP := podIP(t, backendNS, "app=backend")
	l := startLoad(t, "kill", 2000, 4)
	time.Sleep(10 * time.Second)
	start := time.Now()
	mustKubectl(t, "", "-n", relayNS, "delete", "pod", "otelcol-relay-0", "--grace-period=0", "--force")
	eventually(t, "a new otelcol-relay-0 Ready", readyBudget, func() string {
		p, ok := relayPods(t)["otelcol-relay-0"]
		if !ok || p.uid == before["otelcol-relay-0"].uid || !p.ready {
			return fmt.Sprintf("%+v", p)
		}
		return ""
	})
	t.Logf("otelcol-relay-0 replaced and Ready %s after the forced delete", time.Since(start).Round(time.Second))
	_, sc := l.finish(t, backendIP)
	if sc.Missing != 0 {
		t.Errorf("%d acknowledged records never reached the backend (first: %v)", sc.Missing, sc.FirstMissing)
	}
	queuesEmpty(t)
}
