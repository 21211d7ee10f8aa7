// SPDX-License-Identifier: Apache-2.0

// Command devcerts creates, for a test or evaluation cluster, every Secret and
// ConfigMap the pods of one or more kustomizations need and that they do not
// render themselves: a private CA (the CA bundle ConfigMaps), the relay's serving
// keypair, client keypairs, and random stand-ins for header credentials. The
// namespaces go first, everything with `kubectl apply --server-side`, so a second
// run changes nothing: the material is kept in -dir and reused.
//
//	go run ./hack/devcerts [-dir .dev-certs] [-endpoint https://...] deploy/overlays/aks deploy/fluent-bit
//
// It never prints a private key or a token. Production clusters use
// deploy/cert-manager with overlays/platform and real backend credentials.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/podrefs"
)

func main() {
	dir := flag.String("dir", ".dev-certs", "where the CA, the keypairs and the tokens are kept (0700; reused on the next run)")
	endpoint := flag.String("endpoint", "https://otlp.example.invalid:4318", "value of every `endpoint` key (a backend's URL)")
	out := flag.String("out", "", "write the manifests to this file (0600) instead of applying them")
	kubectl := flag.String("kubectl", "kubectl", "the kubectl to run (KUBECONFIG selects the cluster)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: devcerts [flags] <kustomization dir>...")
		os.Exit(2)
	}
	if err := run(*kubectl, *dir, *endpoint, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "devcerts:", err)
		os.Exit(1)
	}
}

func run(kubectl, dir, endpoint, out string, kustomizations []string) error {
	var docs []string
	for _, k := range kustomizations {
		o, err := exec.Command(kubectl, "kustomize", k).Output()
		if err != nil {
			return fmt.Errorf("kubectl kustomize %s: %w", k, err)
		}
		docs = append(docs, strings.Split(string(o), "\n---\n")...)
	}
	overlay, err := parse(docs)
	if err != nil {
		return err
	}
	m, err := openMaterial(dir)
	if err != nil {
		return err
	}
	objects, err := build(overlay, m, endpoint)
	if err != nil {
		return err
	}
	namespaces := overlay.namespaceObjects()
	if out != "" {
		return os.WriteFile(out, manifest(append(namespaces, objects...)), 0o600)
	}
	// The namespaces first: nothing can be created in a namespace that does not exist.
	if err := apply(kubectl, manifest(namespaces)); err != nil {
		return err
	}
	return apply(kubectl, manifest(objects))
}

// overlay is what devcerts reads from the rendered kustomizations.
type overlay struct {
	namespaces map[string]corev1.Namespace
	services   map[string][]string // namespace -> Service names
	rendered   map[string]bool     // Kind/namespace/name the kustomizations create themselves
	refs       []podrefs.Ref
}

func parse(docs []string) (*overlay, error) {
	o := &overlay{namespaces: map[string]corev1.Namespace{}, services: map[string][]string{}, rendered: map[string]bool{}}
	var refs []podrefs.Ref
	for _, doc := range docs {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var meta struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return nil, err
		}
		o.rendered[meta.Kind+"/"+meta.Namespace+"/"+meta.Name] = true
		var spec *corev1.PodSpec
		switch meta.Kind {
		case "Namespace":
			var ns corev1.Namespace
			if err := yaml.Unmarshal([]byte(doc), &ns); err != nil {
				return nil, err
			}
			o.namespaces[ns.Name] = ns
		case "Service":
			o.services[meta.Namespace] = append(o.services[meta.Namespace], meta.Name)
		case "StatefulSet":
			var s appsv1.StatefulSet
			if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
				return nil, err
			}
			spec = &s.Spec.Template.Spec
		case "DaemonSet":
			var s appsv1.DaemonSet
			if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
				return nil, err
			}
			spec = &s.Spec.Template.Spec
		case "Deployment":
			var s appsv1.Deployment
			if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
				return nil, err
			}
			spec = &s.Spec.Template.Spec
		}
		if spec != nil {
			refs = append(refs, podrefs.Of(meta.Namespace, *spec)...)
		}
	}
	// One object per kind, namespace and name, with the union of the keys.
	merged := map[string]*podrefs.Ref{}
	var order []string
	for _, r := range refs {
		if o.rendered[string(r.Kind)+"/"+r.Namespace+"/"+r.Name] {
			continue // a generated config ConfigMap: the kustomization applies it
		}
		id := string(r.Kind) + "/" + r.Namespace + "/" + r.Name
		if m, ok := merged[id]; ok {
			m.Whole = m.Whole || r.Whole
			m.Keys = union(m.Keys, r.Keys)
			continue
		}
		merged[id] = &r
		order = append(order, id)
	}
	sort.Strings(order)
	for _, id := range order {
		o.refs = append(o.refs, *merged[id])
	}
	return o, nil
}

// namespaceObjects is every namespace an object goes in: the rendered Namespace
// where the kustomizations have one (same labels, so their apply agrees).
func (o *overlay) namespaceObjects() []any {
	names := map[string]bool{}
	for _, r := range o.refs {
		names[r.Namespace] = true
	}
	var out []any
	for _, n := range sortedKeys(names) {
		ns, ok := o.namespaces[n]
		if !ok {
			ns = corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}
		}
		ns.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}
		out = append(out, ns)
	}
	return out
}

func apply(kubectl string, manifest []byte) error {
	cmd := exec.Command(kubectl, "apply", "--server-side", "--field-manager=otelcol-relay-dev-certs", "-f", "-")
	cmd.Stdin = bytes.NewReader(manifest)
	// kubectl names the objects it applied, never their data.
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl apply: %w", err)
	}
	return nil
}

func manifest(objects []any) []byte {
	var b bytes.Buffer
	for _, o := range objects {
		y, err := yaml.Marshal(o)
		if err != nil {
			panic(err) // our own structs always marshal
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes()
}

func union(a, b []string) []string {
	set := map[string]bool{}
	for _, s := range append(append([]string{}, a...), b...) {
		set[s] = true
	}
	return sortedKeys(set)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
