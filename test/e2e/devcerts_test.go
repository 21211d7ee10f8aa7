// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

// hack/dev-certs.sh creates what an overlay's pods need, and nothing is missing.

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
	"github.com/otelcol-relay/otelcol-relay/internal/podrefs"
)

var devCertsOverlays = []string{"aks", "example-backend"}

// devCertsObjects is what hack/devcerts writes for the kustomizations, by
// Kind/namespace/name: its keys, with their values.
func devCertsObjects(t *testing.T, dir string, kustomizations ...string) map[string]map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "objects.yaml")
	args := append([]string{"run", "./hack/devcerts", "-dir", dir, "-out", out}, kustomizations...)
	cmd := exec.Command("go", args...)
	cmd.Dir = e2e.RepoRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("devcerts: %v\n%s", err, b)
	}
	objects := map[string]map[string]string{}
	for _, doc := range docsOfFile(t, out) {
		var o struct {
			Kind       string
			Metadata   struct{ Name, Namespace string }
			Data       map[string]string
			StringData map[string]string `json:"stringData"`
		}
		// Never mustUnmarshal: its error would print the document, keys and all.
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("devcerts wrote a document that is not an object: %v", err)
		}
		data := o.Data
		if o.Kind == "Secret" {
			data = o.StringData
		}
		objects[o.Kind+"/"+o.Metadata.Namespace+"/"+o.Metadata.Name] = data
	}
	return objects
}

// podRefsOf is every Secret and ConfigMap the pods of dir read and dir does not
// render itself.
func podRefsOf(t *testing.T, dir string) []podrefs.Ref {
	t.Helper()
	r := manifest.Render(t, dir)
	var specs []struct {
		ns   string
		spec corev1.PodSpec
	}
	for _, s := range r.StatefulSets {
		specs = append(specs, struct {
			ns   string
			spec corev1.PodSpec
		}{s.Namespace, s.Spec.Template.Spec})
	}
	for _, d := range r.DaemonSets {
		specs = append(specs, struct {
			ns   string
			spec corev1.PodSpec
		}{d.Namespace, d.Spec.Template.Spec})
	}
	var out []podrefs.Ref
	for _, s := range specs {
		for _, ref := range podrefs.Of(s.ns, s.spec) {
			if _, generated := r.ConfigMaps[ref.Name]; generated && ref.Kind == podrefs.ConfigMap {
				continue
			}
			out = append(out, ref)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: its pods read no Secret or ConfigMap", dir)
	}
	return out
}

// TestDevCertsCoverOverlay: for the aks and example-backend overlays (with
// deploy/fluent-bit), every Secret and ConfigMap a pod mounts or reads into its
// environment is among what hack/devcerts creates, with every key it reads; the
// serving certificate verifies for the relay's Service name and the client
// certificates for client auth, against the CA in the bundle; and a second run
// writes the same objects.
func TestDevCertsCoverOverlay(t *testing.T) {
	for _, o := range devCertsOverlays {
		t.Run(o, func(t *testing.T) {
			dir := t.TempDir()
			dirs := []string{manifest.Dir("overlays", o), manifest.Dir("fluent-bit")}
			objects := devCertsObjects(t, dir, dirs...)
			for _, d := range dirs {
				for _, ref := range podRefsOf(t, d) {
					data, ok := objects[string(ref.Kind)+"/"+ref.Namespace+"/"+ref.Name]
					if !ok {
						t.Errorf("%s %s/%s (read by %s) is not created", ref.Kind, ref.Namespace, ref.Name, filepath.Base(d))
						continue
					}
					for _, k := range ref.Keys {
						if _, ok := data[k]; !ok {
							t.Errorf("%s %s/%s has no key %s", ref.Kind, ref.Namespace, ref.Name, k)
						}
					}
				}
			}
			checkDevCertsChain(t, objects)
			again := devCertsObjects(t, dir, dirs...)
			for id, data := range objects {
				for k, v := range data {
					if again[id][k] != v {
						t.Errorf("a second run changed %s key %s: an apply would rotate it", id, k)
					}
				}
			}
		})
	}
}

func checkDevCertsChain(t *testing.T, objects map[string]map[string]string) {
	t.Helper()
	ca := objects["ConfigMap/otelcol-relay/otelcol-relay-ca"]["ca.crt"]
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(ca)) {
		t.Fatalf("ConfigMap otelcol-relay-ca ca.crt is no PEM certificate")
	}
	verify := func(id, name string, usage x509.ExtKeyUsage) {
		b, _ := pem.Decode([]byte(objects[id]["tls.crt"]))
		if b == nil {
			t.Errorf("%s tls.crt is no PEM certificate", id)
			return
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("%s: %v", id, err)
		}
		if !strings.Contains(objects[id]["tls.key"], "PRIVATE KEY") {
			t.Errorf("%s has no private key", id)
		}
	}
	verify("Secret/otelcol-relay/otelcol-relay-receiver-tls", "otelcol-relay.otelcol-relay.svc", x509.ExtKeyUsageServerAuth)
	verify("Secret/otelcol-relay/otelcol-relay-agent-tls", "", x509.ExtKeyUsageClientAuth)
	verify("Secret/logging/otelcol-relay-fluent-bit-tls", "", x509.ExtKeyUsageClientAuth)
}

// TestKubeDevCerts: hack/dev-certs.sh against a real API server, on a cluster
// where nothing exists yet (the namespaces neither), for each overlay; then every
// Secret and ConfigMap the overlay's pods read exists with its keys, and the
// overlay applies.
func TestKubeDevCerts(t *testing.T) {
	for _, o := range devCertsOverlays {
		t.Run(o, func(t *testing.T) {
			k := e2e.StartKube(t)
			dirs := []string{manifest.Dir("overlays", o), manifest.Dir("fluent-bit")}
			material := t.TempDir()
			cmd := exec.Command(filepath.Join(e2e.RepoRoot(), "hack", "dev-certs.sh"), append([]string{"-dir", material}, dirs...)...)
			cmd.Env = append(cmd.Environ(), "KUBECONFIG="+k.Kubeconfig)
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("hack/dev-certs.sh: %v\n%s", err, b)
			}
			if strings.Contains(string(b), "PRIVATE KEY") {
				t.Errorf("hack/dev-certs.sh printed a private key")
			}
			tokens, _ := filepath.Glob(filepath.Join(material, "*.token"))
			for _, p := range tokens {
				if tok, err := os.ReadFile(p); err == nil && strings.Contains(string(b), string(tok)) {
					t.Errorf("hack/dev-certs.sh printed the token it stored in %s", filepath.Base(p))
				}
			}
			// A second run changes nothing: the same objects, not one resourceVersion moves.
			versions := func() string {
				return k.MustKubectl(t, "get", "secrets,configmaps", "-A", "-l", "app.kubernetes.io/managed-by=otelcol-relay-dev-certs",
					"-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion} {end}`)
			}
			before := versions()
			again := exec.Command(cmd.Path, cmd.Args[1:]...)
			again.Env = cmd.Env
			if b, err := again.CombinedOutput(); err != nil {
				t.Fatalf("second run: %v\n%s", err, b)
			}
			if after := versions(); after != before {
				t.Errorf("a second run changed objects:\n before %s\n after  %s", before, after)
			}
			for _, d := range dirs {
				for _, ref := range podRefsOf(t, d) {
					out := k.MustKubectl(t, "-n", ref.Namespace, "get", strings.ToLower(string(ref.Kind)), ref.Name, "-o", "jsonpath={.data}")
					for _, key := range ref.Keys {
						if !strings.Contains(out, `"`+key+`"`) {
							t.Errorf("%s %s/%s has no key %s", ref.Kind, ref.Namespace, ref.Name, key)
						}
					}
				}
				k.MustKubectl(t, "apply", "--server-side", "-k", d)
			}
		})
	}
}

func docsOfFile(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, d := range strings.Split("\n"+string(b), "\n---\n") {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, d)
		}
	}
	return docs
}
