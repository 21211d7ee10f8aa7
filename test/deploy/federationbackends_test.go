// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// components/federation-backends: federation's own backends list, built the way
// deploy/docs/federation.md tells a user to, and run through the real binary.

import (
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// The section of deploy/docs/federation.md a user follows to give federation
// backends of its own.
const (
	fedBackendsDoc     = "deploy/docs/federation.md"
	fedBackendsSection = "## Federated metrics to other backends"
)

// fedBackendsRefusal is what kustomize says when components/federation-backends
// comes before components/federation: there is no ConfigMap to merge its list into.
const fedBackendsRefusal = "does not exist; cannot merge or replace"

// The three objects that hold a listed backend's material, the same for the relay
// (components/backends) and federation (components/federation-backends).
const (
	headersSecret = "otelcol-relay-backend-headers"
	casConfigMap  = "otelcol-relay-exporter-cas"
	certsSecret   = "otelcol-relay-exporter-certs"
)

// twoFederationBackends is federation's list with one entry of each kind: the
// doc's (mutual TLS over http, a header), and a header-only gRPC one that names
// federation's one pipeline, as `pipelines:` must.
const twoFederationBackends = `backends:
  - name: corp
    endpoint: https://otlp.corp.example:4318
    protocol: http
    headers: [Authorization]
    tls:
      ca_file: /certs/exporter-cas/corp.crt
      cert_file: /certs/exporter-certs/corp.crt
      key_file: /certs/exporter-certs/corp.key
  - name: datadog
    endpoint: https://otlp.datadoghq.com:4317
    protocol: grpc
    headers: [DD-API-KEY]
    pipelines: [metrics/federation]
`

// relayOnlyBackend is the relay's list: a backend federation must not send to.
const relayOnlyBackend = `backends:
  - name: relayonly
    endpoint: https://otlp.relay-only.example:4317
    headers: [Authorization]
`

// headerValues is what Secret otelcol-relay-backend-headers holds for both
// lists, where its envFrom puts it: no value may reach a printed config.
var headerValues = map[string]string{
	"OTEL_EXPORTER_CORP_AUTHORIZATION":      "Bearer fed-corp-token-6d1f",
	"OTEL_EXPORTER_DATADOG_DD_API_KEY":      "fed-dd-key-0b7e",
	"OTEL_EXPORTER_RELAYONLY_AUTHORIZATION": "Bearer relay-only-token-93a2",
}

func headerEnv() []string {
	var env []string
	for k, v := range headerValues {
		env = append(env, k+"="+v)
	}
	return env
}

// docYAML is the ```yaml block of federation.md's section that starts with the
// line "# file", without that line.
func docYAML(t *testing.T, file string) string {
	t.Helper()
	block, err := manifest.DocBlock(readDoc(t, fedBackendsDoc), fedBackendsSection, "```yaml\n# "+file, "yaml")
	if err != nil {
		t.Fatalf("%s: %v", fedBackendsDoc, err)
	}
	_, rest, _ := strings.Cut(block, "\n")
	return rest
}

// federationBackendsOverlay is the user's overlay of deploy/docs/federation.md,
// "Federated metrics to other backends": their install (my-aks: deploy/base here)
// with the doc's components, and my-federation over it with the doc's
// configMapGenerator and fedList as its backends.yaml ("": the doc's own).
// relayList, when set, is the relay's list: components/backends listed after the
// doc's components (their order does not matter) and merged in my-federation.
// It returns my-federation's folder.
func federationBackendsOverlay(t *testing.T, fedList, relayList string) string {
	t.Helper()
	// Only these are read: resources and the rest are the user's.
	var install struct {
		Components []string `json:"components"`
	}
	var list struct {
		ConfigMapGenerator []map[string]any `json:"configMapGenerator"`
	}
	if err := yaml.Unmarshal([]byte(docYAML(t, "my-aks/kustomization.yaml")), &install); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(docYAML(t, "my-federation/kustomization.yaml")), &list); err != nil {
		t.Fatal(err)
	}
	if fedList == "" {
		fedList = docYAML(t, "my-federation/backends.yaml")
	}
	root := t.TempDir()
	myAKS, myFederation := filepath.Join(root, "my-aks"), filepath.Join(root, "my-federation")
	var components []string
	for _, c := range install.Components {
		sub, ok := strings.CutPrefix(c, "../deploy/")
		if !ok {
			t.Fatalf("%s: component %q is not under ../deploy/", fedBackendsDoc, c)
		}
		components = append(components, relTo(t, myAKS, manifest.Dir(strings.Split(sub, "/")...)))
	}
	generators := list.ConfigMapGenerator
	if relayList != "" {
		components = append(components, relTo(t, myAKS, manifest.Dir("components", "backends")))
		generators = append(generators, map[string]any{
			"name": "otelcol-relay-config", "namespace": "otelcol-relay", "behavior": "merge",
			"files": []string{"backends.yaml=relay-backends.yaml"},
		})
		writeFile(t, filepath.Join(myFederation, "relay-backends.yaml"), relayList)
	}
	writeKustomization(t, myAKS, map[string]any{"resources": []string{relTo(t, myAKS, manifest.Dir("base"))}, "components": components})
	writeKustomization(t, myFederation, map[string]any{"resources": []string{"../my-aks"}, "configMapGenerator": generators})
	writeFile(t, filepath.Join(myFederation, "backends.yaml"), fedList)
	return myFederation
}

// inPod is the environment that gives the collectors the files a pod has (the
// ServiceAccount's, and federation's token where the manifests mount it), which
// components check at validate time. Once per test: it wraps the binary for the
// rest of the test.
func inPod(t *testing.T) []string {
	t.Helper()
	return e2e.InPod(t, "validate-token", testcerts.NewCA(t, "validate").CertPEM, "127.0.0.1", "6443")
}

// runPod runs `otelcol-relay <sub>` as the pod's container starts it (podCommand),
// with the pod's files (inPod) and the header Secret's values in its environment.
func runPod(t *testing.T, r manifest.Rendered, spec corev1.PodSpec, pod []string, sub string) string {
	t.Helper()
	args, env := podCommand(t, r, spec, "otelcol-relay-0", "0")
	env = append(append(env, pod...), headerEnv()...)
	out, code := e2e.Run(t, 2*time.Minute, env, append([]string{sub}, args...)...)
	if code != 0 {
		t.Fatalf("%s %v (exit %d):\n%s", sub, args, code, out)
	}
	return out
}

// printedConfig is the part of `otelcol-relay print-config` these tests read.
type printedConfig struct {
	Exporters map[string]struct {
		Endpoint string `json:"endpoint"`
		Headers  []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"headers"`
		SendingQueue struct {
			Storage   string `json:"storage"`
			QueueSize int64  `json:"queue_size"`
		} `json:"sending_queue"`
	} `json:"exporters"`
	Service struct {
		Pipelines map[string]struct {
			Exporters []string `json:"exporters"`
		} `json:"pipelines"`
	} `json:"service"`
}

// printConfig is print-config of the pod's container, parsed; the raw text too,
// for what must not be in it.
func printConfig(t *testing.T, r manifest.Rendered, spec corev1.PodSpec, pod []string) (printedConfig, string) {
	t.Helper()
	out := runPod(t, r, spec, pod, "print-config")
	var c printedConfig
	if err := yaml.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("print-config: %v\n%s", err, out)
	}
	return c, out
}

// listedExporters is the exporter id of each entry of a backends list, as
// components/backendsconverter names it.
func listedExporters(t *testing.T, list string) []string {
	t.Helper()
	var l struct {
		Backends []struct {
			Name     string `json:"name"`
			Protocol string `json:"protocol"`
		} `json:"backends"`
	}
	if err := yaml.Unmarshal([]byte(list), &l); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, b := range l.Backends {
		typ := "otlp_grpc"
		if b.Protocol == "http" {
			typ = "otlp_http_wire"
		}
		ids = append(ids, typ+"/"+b.Name)
	}
	return ids
}

// materialUse is how a pod spec's first container takes one of the three objects:
// loaded with envFrom, or mounted (where, read-only, its mode), and whether the pod
// starts without it.
func materialUse(spec corev1.PodSpec, object string) []string {
	c := spec.Containers[0]
	var uses []string
	for _, from := range c.EnvFrom {
		if from.SecretRef != nil && from.SecretRef.Name == object {
			uses = append(uses, fmt.Sprintf("envFrom secret prefix=%q optional=%v", from.Prefix, from.SecretRef.Optional != nil && *from.SecretRef.Optional))
		}
	}
	for _, v := range spec.Volumes {
		var kind string
		var optional *bool
		var mode *int32
		switch {
		case v.ConfigMap != nil && v.ConfigMap.Name == object:
			kind, optional, mode = "configMap", v.ConfigMap.Optional, v.ConfigMap.DefaultMode
		case v.Secret != nil && v.Secret.SecretName == object:
			kind, optional, mode = "secret", v.Secret.Optional, v.Secret.DefaultMode
		default:
			continue
		}
		m := "default"
		if mode != nil {
			m = fmt.Sprintf("%#o", *mode)
		}
		for _, vm := range c.VolumeMounts {
			if vm.Name == v.Name {
				uses = append(uses, fmt.Sprintf("%s at %s readOnly=%v subPath=%q optional=%v mode=%s",
					kind, vm.MountPath, vm.ReadOnly, vm.SubPath, optional != nil && *optional, m))
			}
		}
	}
	slices.Sort(uses)
	return uses
}

// TestDeployFederationBackends: with components/federation-backends after
// components/federation, as deploy/docs/federation.md writes the user's overlay
// (and components/backends for the relay beside it), the federation StatefulSet
// takes the header Secret, the CA ConfigMap and the client-cert Secret exactly
// as the relay does, reads the list from its own ConfigMap with one more
// --config, and the real binary accepts the result: print-config has an
// exporter per entry of its list in its pipeline, beside the default backend,
// each queued on federation's volume, and no header value. The default and one
// listed backend fit the 5Gi queue volume as shipped.
func TestDeployFederationBackends(t *testing.T) {
	r := manifest.Render(t, federationBackendsOverlay(t, twoFederationBackends, relayOnlyBackend))
	relay, fed := r.StatefulSetOf(t, "gateway"), r.StatefulSetOf(t, "federation")
	for _, object := range []string{headersSecret, casConfigMap, certsSecret} {
		want, got := materialUse(relay.Spec.Template.Spec, object), materialUse(fed.Spec.Template.Spec, object)
		if len(want) == 0 {
			t.Fatalf("the relay (components/backends) does not take %s: nothing to compare federation with", object)
		}
		if !slices.Equal(got, want) {
			t.Errorf("federation takes %s as %q, the relay as %q: the same objects must serve both workloads at the same places", object, got, want)
		}
	}
	const listArg = "--config=/etc/otelcol-relay/config/backends.yaml"
	if args := fed.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, listArg) {
		t.Errorf("federation's args %q lack %s", args, listArg)
	}

	pod := inPod(t)
	runPod(t, r, fed.Spec.Template.Spec, pod, "validate")
	cfg, raw := printConfig(t, r, fed.Spec.Template.Spec, pod)
	p, ok := cfg.Service.Pipelines["metrics/federation"]
	if !ok || len(cfg.Service.Pipelines) != 1 {
		t.Fatalf("federation's pipelines %v: want metrics/federation, its only one", cfg.Service.Pipelines)
	}
	listed := listedExporters(t, twoFederationBackends)
	var bounds int64
	for _, id := range append([]string{"otlp_http/default"}, listed...) {
		if !slices.Contains(p.Exporters, id) {
			t.Errorf("metrics/federation exports to %v, not to %s", p.Exporters, id)
		}
		e := cfg.Exporters[id]
		if e.SendingQueue.Storage != "file_storage" || e.SendingQueue.QueueSize <= 0 {
			t.Errorf("%s queues on %q with bound %d: want federation's file_storage volume (a scrape not queued is never fetched again)", id, e.SendingQueue.Storage, e.SendingQueue.QueueSize)
		}
		if id == "otlp_http/default" || id == listed[0] {
			bounds += e.SendingQueue.QueueSize
		}
		for _, h := range e.Headers {
			if h.Value != "[REDACTED]" {
				t.Errorf("print-config shows %s's header %s as %q, not [REDACTED]", id, h.Name, h.Value)
			}
		}
		if id != "otlp_http/default" && len(e.Headers) != 1 {
			t.Errorf("%s has headers %+v, want its one header, redacted", id, e.Headers)
		}
	}
	for name, value := range headerValues {
		if strings.Contains(raw, value) {
			t.Errorf("print-config of federation shows the header value of %s", name)
		}
	}
	for _, s := range []string{"backends:", "backend_defaults", "relayonly"} {
		if strings.Contains(raw, s) {
			t.Errorf("print-config of federation contains %q", s)
		}
	}
	// otelcol-relay checks twice the bounds against the volume it runs on, the
	// host's here: the claim must hold the default's and the first entry's with
	// room for ext4's 5% root reserve and its metadata.
	var claim resource.Quantity
	for _, c := range fed.Spec.VolumeClaimTemplates {
		if c.Name == "queue" {
			claim = c.Spec.Resources.Requests[corev1.ResourceStorage]
		}
	}
	if usable := claim.Value() * 9 / 10; 2*bounds > usable {
		t.Errorf("the default and one listed backend queue up to %d bytes, twice over %d, more than 90%% of the %s claim (%d)", bounds, 2*bounds, claim.String(), usable)
	}
}

// TestDeployFederationBackendsAfterFederation: components/federation-backends
// merges into federation's ConfigMap, so listed before components/federation (or
// without it) the build stops in it, with a message a doc quotes; no tracked
// kustomization or doc example lists it first. Its order against the other
// components does not matter: each order renders the same federation.
func TestDeployFederationBackendsAfterFederation(t *testing.T) {
	base, fed, list := manifest.Dir("base"), manifest.Dir("components", "federation"), manifest.Dir("components", "federation-backends")
	for name, order := range map[string][]string{"before federation": {list, fed}, "without federation": {list}} {
		out, err := exec.Command("kubectl", "kustomize", manifest.OverlayOf(t, []string{base}, order...)).CombinedOutput()
		switch {
		case err == nil:
			t.Errorf("federation-backends %s renders", name)
		case !strings.Contains(string(out), fedBackendsRefusal) || !strings.Contains(string(out), "otelcol-relay-federation-config") ||
			!strings.Contains(string(out), "components/federation-backends"):
			t.Errorf("federation-backends %s fails, but not with the refusal the docs explain (%q on otelcol-relay-federation-config in components/federation-backends):\n%s", name, fedBackendsRefusal, out)
		}
	}
	explained := false
	for _, doc := range userDocs(t) {
		text := readDoc(t, doc)
		explained = explained || (strings.Contains(text, fedBackendsRefusal) && strings.Contains(text, "components/federation-backends"))
	}
	if !explained {
		t.Errorf("no user doc quotes the refusal %q, which a user who lists federation-backends first gets", fedBackendsRefusal)
	}
	for _, where := range listedBefore(t, "federation-backends", "federation") {
		t.Errorf("%s lists federation-backends before federation, which the build refuses", where)
	}

	others := []string{"backends", "federation-plain-http", "federation-shards", "backend-default-mtls"}
	var first, last []string
	for _, c := range others {
		first = append(first, manifest.Dir("components", c))
	}
	last = slices.Clone(first)
	first = append([]string{fed, list}, first...)
	last = append([]string{fed}, append(last, list)...)
	ya := normalizedFederation(t, manifest.OverlayOf(t, []string{base}, first...))
	yb := normalizedFederation(t, manifest.OverlayOf(t, []string{base}, last...))
	if ya != yb {
		t.Errorf("federation-backends right after federation and after %v render different federation StatefulSets:\n%s\n---\n%s", others, ya, yb)
	}
}

// normalizedFederation is dir's federation StatefulSet as YAML, its lists keyed
// by name sorted: an order a component appends in changes nothing the pod gets.
func normalizedFederation(t *testing.T, dir string) string {
	t.Helper()
	s := manifest.Render(t, dir).StatefulSetOf(t, "federation")
	spec := &s.Spec.Template.Spec
	c := &spec.Containers[0]
	slices.SortFunc(c.Env, func(a, b corev1.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(c.VolumeMounts, func(a, b corev1.VolumeMount) int { return strings.Compare(a.MountPath, b.MountPath) })
	slices.SortFunc(spec.Volumes, func(a, b corev1.Volume) int { return strings.Compare(a.Name, b.Name) })
	out, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestDeployFederationReachesListedBackendsAsTheRelayDoes: federation's
// NetworkPolicy lets it reach every endpoint of its list, as base's lets the
// relay reach the same endpoint: by port, at an address outside the cluster or
// a pod in another namespace.
func TestDeployFederationReachesListedBackendsAsTheRelayDoes(t *testing.T) {
	pols := networkPolicies(t, federationBackendsOverlay(t, "", ""))
	fedPod := map[string]string{"app.kubernetes.io/name": "otelcol-relay", "app.kubernetes.io/component": "federation"}
	var endpoints []string
	for _, list := range []string{twoFederationBackends, docYAML(t, "my-federation/backends.yaml")} {
		var l struct {
			Backends []struct {
				Endpoint string `json:"endpoint"`
			} `json:"backends"`
		}
		if err := yaml.Unmarshal([]byte(list), &l); err != nil {
			t.Fatal(err)
		}
		for _, b := range l.Backends {
			endpoints = append(endpoints, b.Endpoint)
		}
	}
	dests := []peer{
		{name: "a backend outside the cluster", ip: "203.0.113.7"},
		{name: "a backend pod in another namespace", ip: "198.19.7.7", podLabels: map[string]string{"app": "backend"},
			nsLabs: map[string]string{"kubernetes.io/metadata.name": "observability"}},
	}
	for _, endpoint := range endpoints {
		u, err := url.Parse(endpoint)
		if err != nil {
			t.Fatal(err)
		}
		_, ps, err := net.SplitHostPort(u.Host)
		if err != nil {
			t.Fatalf("%s: %v", endpoint, err)
		}
		port, err := strconv.ParseInt(ps, 10, 32)
		if err != nil {
			t.Fatalf("%s: port: %v", endpoint, err)
		}
		for _, d := range dests {
			relay := egressAllowed(t, pols, gatewayPod, d, corev1.ProtocolTCP, int32(port))
			fed := egressAllowed(t, pols, fedPod, d, corev1.ProtocolTCP, int32(port))
			if !fed || fed != relay {
				t.Errorf("%s (%s): federation may reach it %v, the relay %v; both must", endpoint, d.name, fed, relay)
			}
		}
	}
}
