// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// deploy/fluent-bit's DaemonSet runs the configuration the repository ships: the
// file it passes with -c is the ConfigMap's key, the files the configuration
// reads are mounted where it reads them, and its ServiceAccount may do what the
// kubernetes filter asks of the API server.

import (
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

const fluentBitNamespace = "logging"

func fluentBitDaemonSet(t *testing.T) (manifest.Rendered, appsv1.DaemonSet) {
	t.Helper()
	r := manifest.Render(t, manifest.Dir("fluent-bit"))
	if len(r.DaemonSets) != 1 {
		t.Fatalf("deploy/fluent-bit renders %d DaemonSets, want fluent-bit's one", len(r.DaemonSets))
	}
	return r, r.DaemonSets[0]
}

// TestDeployFluentBitDaemonSet: the DaemonSet's -c file is the shipped
// fluent-bit.yaml from the mounted ConfigMap; the output's TLS files come from
// the client-certificate Secret cert-manager writes and the CA ConfigMap the relay
// trusts; tail's logs, its offsets db and storage.path are on hostPaths at the
// same place, so logs are found and the buffer survives a restart.
func TestDeployFluentBitDaemonSet(t *testing.T) {
	r, ds := fluentBitDaemonSet(t)
	if ds.Namespace != fluentBitNamespace {
		t.Errorf("DaemonSet in namespace %q, want %q (where overlays/platform-fluent-bit's Certificate writes fluent-bit's Secret)", ds.Namespace, fluentBitNamespace)
	}
	checkFluentBitPod(t, r, ds.Spec.Template.Spec)
	if got := ds.Spec.Template.Labels["app.kubernetes.io/name"]; got != "fluent-bit" {
		t.Errorf("pod label app.kubernetes.io/name = %q: the relay's NetworkPolicy admits only fluent-bit", got)
	}
}

// checkFluentBitPod checks that spec runs deploy/fluent-bit/fluent-bit.yaml
// from r's ConfigMap with every file it reads mounted from where it must come.
func checkFluentBitPod(t *testing.T, r manifest.Rendered, spec corev1.PodSpec) {
	t.Helper()
	c := spec.Containers[0]
	argv := append(append([]string{}, c.Command...), c.Args...)
	var conf string
	for i, a := range argv {
		if a == "-c" && i+1 < len(argv) {
			conf = argv[i+1]
		}
	}
	if len(c.Command) == 0 || conf == "" {
		t.Fatalf("command %v args %v: want the binary and -c <file> (the image's CMD reads the classic fluent-bit.conf)", c.Command, c.Args)
	}
	if !strings.HasSuffix(conf, ".yaml") {
		t.Errorf("-c %s: fluent-bit reads a file as YAML only when its name ends in .yaml", conf)
	}
	v, key := manifest.MountedVolume(t, spec, c, conf)
	if v.ConfigMap == nil {
		t.Fatalf("-c %s is on volume %s, not a ConfigMap", conf, v.Name)
	}
	shipped, err := os.ReadFile(manifest.Dir("fluent-bit", "fluent-bit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := r.ConfigMaps[v.ConfigMap.Name].Data[key]; !ok {
		t.Fatalf("-c %s: ConfigMap %s has no key %s (keys %v)", conf, v.ConfigMap.Name, key, slices.Sorted(maps.Keys(r.ConfigMaps[v.ConfigMap.Name].Data)))
	} else if got != string(shipped) {
		t.Errorf("ConfigMap %s key %s is not deploy/fluent-bit/fluent-bit.yaml", v.ConfigMap.Name, key)
	}

	fb := parseFluentBit(t, shipped)
	out := fb.Pipeline.Outputs[0]
	// The Secret cert-manager writes fluent-bit's client certificate to, and the
	// ConfigMap of the CA the relay's receiver verifies clients with.
	secret := certManagerSecret(t, "otelcol-relay-fluent-bit-tls")
	caConfigMap := relayClientCAConfigMap(t)
	for k, want := range map[string][2]string{
		"tls.crt_file": {"secret", secret}, "tls.key_file": {"secret", secret}, "tls.ca_file": {"configMap", caConfigMap},
	} {
		file := fluentBitString(out, k)
		v, p := manifest.MountedVolume(t, spec, c, file)
		if got := manifest.ProjectedFrom(v, p); got != want {
			t.Errorf("output %s %s comes from %v, want %v", k, file, got, want)
		}
	}

	hostFiles := map[string]string{"service storage.path": fluentBitString(fb.Service, "storage.path")}
	for _, in := range fb.Pipeline.Inputs {
		if fluentBitString(in, "name") == "tail" {
			hostFiles["tail path"] = path.Dir(fluentBitString(in, "path"))
			hostFiles["tail db"] = fluentBitString(in, "db")
		}
	}
	for what, file := range hostFiles {
		if file == "" || file == "." {
			t.Errorf("%s is not set", what)
			continue
		}
		v, p := manifest.MountedVolume(t, spec, c, strings.TrimSuffix(file, "/"))
		if v.HostPath == nil {
			t.Errorf("%s %s is on volume %s, not a hostPath: it would not be the node's, or not survive the pod", what, file, v.Name)
			continue
		}
		if hp := path.Join(v.HostPath.Path, p); hp != strings.TrimSuffix(file, "/") {
			t.Errorf("%s %s is the node's %s", what, file, hp)
		}
	}
	// The kubelet's log symlinks point into /var/log/pods: tail must see both.
	if v, _ := manifest.MountedVolume(t, spec, c, "/var/log/pods/x"); v.HostPath == nil || v.HostPath.Path != "/var/log" && v.HostPath.Path != "/var/log/pods" {
		t.Errorf("/var/log/pods is not the node's (volume %s)", v.Name)
	}
	if len(spec.Tolerations) == 0 {
		t.Errorf("no tolerations: tainted nodes' logs would not be shipped")
	}
	if spec.ServiceAccountName == "" || spec.ServiceAccountName == "default" {
		t.Errorf("serviceAccountName %q: the kubernetes filter needs the RBAC of its own ServiceAccount", spec.ServiceAccountName)
	}
}

// TestDeployFluentBitHelmValues: the pod the fluent-bit Helm chart renders from
// helm-values.yaml, built as the chart's templates/_pod.tpl builds it (the
// `config` volume is existingConfigMap, mounted at /fluent-bit/etc/conf;
// daemonSetVolumes and extraVolumes are appended), passes the DaemonSet's checks.
func TestDeployFluentBitHelmValues(t *testing.T) {
	raw, err := os.ReadFile(manifest.Dir("fluent-bit", "helm-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Image                 struct{ Repository, Tag string }
		ExistingConfigMap     string `json:"existingConfigMap"`
		Command, Args         []string
		Env                   []corev1.EnvVar
		VolumeMounts          []corev1.VolumeMount `json:"volumeMounts"`
		DaemonSetVolumes      []corev1.Volume      `json:"daemonSetVolumes"`
		DaemonSetVolumeMounts []corev1.VolumeMount `json:"daemonSetVolumeMounts"`
		ExtraVolumes          []corev1.Volume      `json:"extraVolumes"`
		ExtraVolumeMounts     []corev1.VolumeMount `json:"extraVolumeMounts"`
		Tolerations           []corev1.Toleration
		LivenessProbe         *corev1.Probe `json:"livenessProbe"`
		ReadinessProbe        *corev1.Probe `json:"readinessProbe"`
	}
	if err := yaml.UnmarshalStrict(raw, &v); err != nil {
		t.Fatal(err)
	}
	r, ds := fluentBitDaemonSet(t)
	if img := v.Image.Repository + ":" + v.Image.Tag; img != ds.Spec.Template.Spec.Containers[0].Image {
		t.Errorf("Helm values run %s, the DaemonSet %s", img, ds.Spec.Template.Spec.Containers[0].Image)
	}
	for _, m := range v.VolumeMounts {
		if m.Name == "config" && m.MountPath != "/fluent-bit/etc/conf" {
			t.Errorf("volumeMounts puts config at %s; newer charts mount it at /fluent-bit/etc/conf whatever the value says", m.MountPath)
		}
	}
	spec := corev1.PodSpec{
		ServiceAccountName: "fluent-bit", // the chart's own, bound by its ClusterRole
		Tolerations:        v.Tolerations,
		Volumes:            append(append([]corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: v.ExistingConfigMap}}}}}, v.DaemonSetVolumes...), v.ExtraVolumes...),
		Containers: []corev1.Container{{
			Name: "fluent-bit", Command: v.Command, Args: v.Args, Env: v.Env,
			VolumeMounts: append(append([]corev1.VolumeMount{{Name: "config", MountPath: "/fluent-bit/etc/conf"}}, v.DaemonSetVolumeMounts...), v.ExtraVolumeMounts...),
		}},
	}
	checkFluentBitPod(t, r, spec)
	// fluent-bit.yaml reads the relay's address from the environment: the chart's
	// pod sets every variable the DaemonSet sets, to the same value.
	helmEnv := manifest.Env(ds.Namespace, spec.Containers[0])
	for k, want := range manifest.Env(ds.Namespace, ds.Spec.Template.Spec.Containers[0]) {
		if got, ok := helmEnv[k]; !ok || got != want {
			t.Errorf("Helm values env %s = %q, the DaemonSet sets %q", k, got, want)
		}
	}
	// The chart's pod mounts the client key as the DaemonSet does: without a
	// defaultMode its files are 0644, readable by every user in the container.
	for _, hv := range spec.Volumes {
		mode, holds := secretVolumeMode(hv)
		if !holds {
			continue
		}
		i := slices.IndexFunc(ds.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == hv.Name })
		if i < 0 {
			t.Errorf("Helm values volume %s holds a Secret the DaemonSet has no volume for", hv.Name)
			continue
		}
		want, _ := secretVolumeMode(ds.Spec.Template.Spec.Volumes[i])
		switch {
		case mode == nil:
			t.Errorf("Helm values volume %s has no defaultMode, so its key is 0644; the DaemonSet's is %s", hv.Name, octal(want))
		case want == nil || *mode != *want:
			t.Errorf("Helm values volume %s has defaultMode %s, the DaemonSet's %s", hv.Name, octal(mode), octal(want))
		case *mode&^secretModeMax != 0:
			t.Errorf("Helm values volume %s: defaultMode %s grants more than %#o", hv.Name, octal(mode), secretModeMax)
		}
	}
}

func octal(m *int32) string {
	if m == nil {
		return "unset (0644)"
	}
	return fmt.Sprintf("%#o", *m)
}

// certManagerSecret is the secretName of overlays/platform-fluent-bit's
// Certificate name, in fluent-bit's namespace.
func certManagerSecret(t *testing.T, name string) string {
	t.Helper()
	for _, doc := range manifest.Docs(t, manifest.Dir("overlays", "platform-fluent-bit")) {
		var cert struct {
			Kind     string `json:"kind"`
			Metadata struct{ Name, Namespace string }
			Spec     struct {
				SecretName string `json:"secretName"`
			}
		}
		manifest.UnmarshalLoose(t, doc, &cert)
		if cert.Kind == "Certificate" && cert.Metadata.Name == name {
			if cert.Metadata.Namespace != fluentBitNamespace {
				t.Errorf("Certificate %s writes its Secret in %q, fluent-bit runs in %q", name, cert.Metadata.Namespace, fluentBitNamespace)
			}
			return cert.Spec.SecretName
		}
	}
	t.Fatalf("overlays/platform-fluent-bit has no Certificate %s", name)
	return ""
}

// relayClientCAConfigMap is the ConfigMap behind the relay's
// RELAY_OTLP_CLIENT_CA_FILE: the CA a client certificate must chain to.
func relayClientCAConfigMap(t *testing.T) string {
	t.Helper()
	r := manifest.Render(t, manifest.Dir("base"))
	for _, sts := range r.StatefulSets {
		if sts.Name != "otelcol-relay" {
			continue
		}
		c := sts.Spec.Template.Spec.Containers[0]
		for _, e := range c.Env {
			if e.Name == "RELAY_OTLP_CLIENT_CA_FILE" {
				v, p := manifest.MountedVolume(t, sts.Spec.Template.Spec, c, e.Value)
				return manifest.ProjectedFrom(v, p)[1]
			}
		}
	}
	t.Fatal("the relay sets no RELAY_OTLP_CLIENT_CA_FILE")
	return ""
}
