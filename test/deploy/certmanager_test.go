// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// Proof for deploy/cert-manager, deploy/components/cert-manager,
// deploy/overlays/platform and deploy/overlays/platform-fluent-bit without a
// cluster: the Secrets and ConfigMap the pods mount are the ones cert-manager and
// trust-manager write, as shipped and under a user's namespace and namePrefix. The
// same objects applied server-side to a kube-apiserver with the real CRDs are
// TestKubeCertManagerComponent in test/e2e, and they run on the cluster in
// TestPlatformOverlay.

import (
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// The fields of cert-manager's and trust-manager's objects these tests read.
type cmCertificate struct {
	Metadata struct{ Name, Namespace string } `json:"metadata"`
	Spec     struct {
		SecretName string                      `json:"secretName"`
		IsCA       bool                        `json:"isCA"`
		DNSNames   []string                    `json:"dnsNames"`
		Usages     []string                    `json:"usages"`
		IssuerRef  struct{ Kind, Name string } `json:"issuerRef"`
	} `json:"spec"`
}

type cmClusterIssuer struct {
	CA *struct {
		SecretName string `json:"secretName"`
	} `json:"ca"`
	SelfSigned *struct{} `json:"selfSigned"`
}

type tmBundle struct {
	Target struct {
		ConfigMap         struct{ Key string } `json:"configMap"`
		NamespaceSelector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"namespaceSelector"`
	} `json:"target"`
}

// certManagerObjects are the objects of one or more renderings these tests read.
type certManagerObjects struct {
	certificates   []cmCertificate
	clusterIssuers map[string]cmClusterIssuer
	bundles        map[string]tmBundle
	namespaces     map[string]map[string]string // name -> labels
	sts            []appsv1.StatefulSet
	ds             []appsv1.DaemonSet
}

// renderCertManager renders each folder, as one cluster has them all applied.
func renderCertManager(t *testing.T, dirs ...string) certManagerObjects {
	t.Helper()
	r := certManagerObjects{clusterIssuers: map[string]cmClusterIssuer{}, bundles: map[string]tmBundle{}, namespaces: map[string]map[string]string{}}
	for _, dir := range dirs {
		for _, doc := range manifest.Docs(t, dir) {
			var head struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name, Namespace string
					Labels          map[string]string
				}
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatal(err)
			}
			switch head.Kind {
			case "Namespace":
				r.namespaces[head.Metadata.Name] = head.Metadata.Labels
			case "Certificate":
				var c cmCertificate
				manifest.UnmarshalLoose(t, doc, &c)
				r.certificates = append(r.certificates, c)
			case "ClusterIssuer":
				var ci struct {
					Spec cmClusterIssuer `json:"spec"`
				}
				manifest.UnmarshalLoose(t, doc, &ci)
				r.clusterIssuers[head.Metadata.Name] = ci.Spec
			case "Bundle":
				var b struct {
					Spec tmBundle `json:"spec"`
				}
				manifest.UnmarshalLoose(t, doc, &b)
				r.bundles[head.Metadata.Name] = b.Spec
			case "StatefulSet":
				manifest.AppendDoc(t, doc, &r.sts)
			case "DaemonSet":
				manifest.AppendDoc(t, doc, &r.ds)
			}
			if head.Kind != "" && head.Metadata.Namespace == "" && !clusterScoped[head.Kind] {
				t.Errorf("%s: %s %s has no namespace: kubectl would put it in the current context's", dir, head.Kind, head.Metadata.Name)
			}
			if clusterScoped[head.Kind] && head.Kind != "Namespace" && head.Metadata.Namespace != "" {
				t.Errorf("%s: cluster-scoped %s %s has namespace %q: a user's namespace transformer reached it", dir, head.Kind, head.Metadata.Name, head.Metadata.Namespace)
			}
		}
	}
	return r
}

var clusterScoped = map[string]bool{"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "ClusterIssuer": true, "Bundle": true}

// The cluster's part, applied once and never under a user's namespace.
var certManagerCluster = []string{manifest.Dir("cert-manager"), manifest.Dir("cert-manager", "trust-manager")}

// TestDeployCertManagerWiring checks, without a cluster, that the certificates
// land where the manifests read them, for the install as shipped and moved to
// team-obs under a-: every keypair Secret the relays and the agents mount is a
// Certificate's secretName in the same namespace; the CA ConfigMap is the
// trust-manager Bundle's target, whose label selects their namespace and
// fluent-bit's; each issuer chain resolves to the cluster's CA; the serving
// certificate carries the name the agents and fluent-bit check.
func TestDeployCertManagerWiring(t *testing.T) {
	platform := manifest.Dir("overlays", "platform")
	fluentBit := manifest.Dir("overlays", "platform-fluent-bit")
	for name, install := range map[string]string{"as shipped": platform, "moved to team-obs as a-": manifest.MovedTo(t, platform, "team-obs", "a-")} {
		t.Run(name, func(t *testing.T) {
			r := renderCertManager(t, append(slices.Clone(certManagerCluster), install, fluentBit)...)
			checkIssuance(t, r)
			checked := 0
			for _, s := range r.sts {
				checked += checkCertMounts(t, r, "StatefulSet "+s.Name, s.Namespace, s.Spec.Template.Spec)
			}
			for _, d := range r.ds {
				checked += checkCertMounts(t, r, "DaemonSet "+d.Name, d.Namespace, d.Spec.Template.Spec)
			}
			// The relays' receiver keypair and CA bundle, the agents' keypair and CA
			// bundle, fluent-bit's keypair and CA bundle.
			if checked < 6 {
				t.Errorf("only %d certificate mounts checked; want the receiver keypair, the agents' and fluent-bit's, and the CA bundle of each", checked)
			}
			checkServerNames(t, r)
		})
	}
}

// checkIssuance: every Certificate is signed by a ClusterIssuer of deploy/cert-manager,
// whose CA Secret an isCA Certificate in cert-manager's namespace writes.
func checkIssuance(t *testing.T, r certManagerObjects) {
	t.Helper()
	for _, c := range r.certificates {
		ci, ok := r.clusterIssuers[c.Spec.IssuerRef.Name]
		if c.Spec.IssuerRef.Kind != "ClusterIssuer" || !ok {
			t.Errorf("Certificate %s/%s: issuer %s/%s is not a ClusterIssuer of deploy/cert-manager", c.Metadata.Namespace, c.Metadata.Name, c.Spec.IssuerRef.Kind, c.Spec.IssuerRef.Name)
			continue
		}
		if ci.CA == nil {
			continue
		}
		// A CA ClusterIssuer reads its Secret from cert-manager's namespace.
		if !slices.ContainsFunc(r.certificates, func(ca cmCertificate) bool {
			return ca.Spec.IsCA && ca.Metadata.Namespace == "cert-manager" && ca.Spec.SecretName == ci.CA.SecretName
		}) {
			t.Errorf("ClusterIssuer %s reads Secret %s, which no isCA Certificate in namespace cert-manager writes", c.Spec.IssuerRef.Name, ci.CA.SecretName)
		}
	}
}

// checkCertMounts checks each Secret and ConfigMap of spec that holds a keypair or
// the CA bundle against what cert-manager and trust-manager write; it returns how
// many it checked.
func checkCertMounts(t *testing.T, r certManagerObjects, kind, ns string, spec corev1.PodSpec) int {
	t.Helper()
	secrets := map[string]bool{} // namespace/secretName
	for _, c := range r.certificates {
		secrets[c.Metadata.Namespace+"/"+c.Spec.SecretName] = true
	}
	checked := 0
	for _, v := range spec.Volumes {
		var refs []mountRef
		if v.Secret != nil {
			refs = append(refs, mountRef{secret: v.Secret.SecretName, keys: itemKeys(v.Secret.Items)})
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					refs = append(refs, mountRef{secret: s.Secret.Name, keys: itemKeys(s.Secret.Items)})
				}
				if s.ConfigMap != nil {
					refs = append(refs, mountRef{configMap: s.ConfigMap.Name, keys: itemKeys(s.ConfigMap.Items)})
				}
			}
		}
		if v.ConfigMap != nil {
			refs = append(refs, mountRef{configMap: v.ConfigMap.Name, keys: itemKeys(v.ConfigMap.Items)})
		}
		for _, ref := range refs {
			switch {
			case ref.secret != "" && strings.HasPrefix(ref.secret, "otelcol-relay-backend-"):
				// The backends' credentials are the user's, not the cluster's CA's.
			case ref.secret != "":
				if !secrets[ns+"/"+ref.secret] {
					t.Errorf("%s volume %s mounts Secret %s/%s, which no Certificate writes", kind, v.Name, ns, ref.secret)
				}
				for _, k := range ref.keys {
					if k != "tls.crt" && k != "tls.key" && k != "ca.crt" {
						t.Errorf("%s volume %s reads key %s of Secret %s; cert-manager writes tls.crt, tls.key, ca.crt", kind, v.Name, k, ref.secret)
					}
				}
				checked++
			case ref.configMap == "otelcol-relay-ca":
				b, ok := r.bundles[ref.configMap]
				if !ok {
					t.Errorf("%s mounts ConfigMap %s, which no trust-manager Bundle writes", kind, ref.configMap)
					continue
				}
				labels, ok := r.namespaces[ns]
				if !ok {
					t.Errorf("%s runs in namespace %s, which no rendering creates", kind, ns)
				}
				sel := b.Target.NamespaceSelector.MatchLabels
				if !selects(sel, labels) {
					t.Errorf("Bundle %s (namespaces labelled %v) does not target namespace %s (labels %v), where %s mounts it", ref.configMap, sel, ns, labels, kind)
				}
				for _, k := range ref.keys {
					if k != b.Target.ConfigMap.Key {
						t.Errorf("%s reads key %s of ConfigMap %s; the Bundle writes %s", kind, k, ref.configMap, b.Target.ConfigMap.Key)
					}
				}
				checked++
			}
		}
	}
	return checked
}

// checkServerNames: the serving Certificate, in the relays' namespace, carries the
// name each client checks: the agents' RELAY_GATEWAY_SERVER_NAME (or, unset, the
// host they dial) and fluent-bit's tls.vhost as its DaemonSet expands it; and
// fluent-bit's client Certificate is in fluent-bit's namespace.
func checkServerNames(t *testing.T, r certManagerObjects) {
	t.Helper()
	var serving *cmCertificate
	for i, c := range r.certificates {
		if slices.Contains(c.Spec.Usages, "server auth") {
			serving = &r.certificates[i]
		}
	}
	if serving == nil {
		t.Fatal("no serving Certificate for the relays' receiver")
	}
	covers := func(who, name string) {
		if name == "" || !slices.Contains(serving.Spec.DNSNames, name) {
			t.Errorf("serving Certificate %s (dnsNames %v) does not carry %q, the name %s checks", serving.Metadata.Name, serving.Spec.DNSNames, name, who)
		}
	}
	for _, d := range r.ds {
		env := manifest.Env(d.Namespace, d.Spec.Template.Spec.Containers[0])
		if gw, ok := env["OTELCOL_RELAY_GATEWAY"]; ok {
			if d.Namespace != serving.Metadata.Namespace {
				t.Errorf("DaemonSet %s in %s, the serving Certificate in %s", d.Name, d.Namespace, serving.Metadata.Namespace)
			}
			name := env["RELAY_GATEWAY_SERVER_NAME"]
			if name == "" {
				name = gw[:strings.LastIndexByte(gw, ':')]
			}
			covers("the agents ("+d.Name+")", name)
			continue
		}
		if d.Spec.Template.Labels["app.kubernetes.io/name"] != "fluent-bit" {
			continue
		}
		// Only as shipped: a relay elsewhere is the user's patch of fluent-bit
		// (overlays/platform-fluent-bit says which).
		if serving.Metadata.Namespace == "otelcol-relay" {
			covers("fluent-bit", os.Expand(fluentBitVhost(t), func(k string) string { return env[k] }))
		}
		if !slices.ContainsFunc(r.certificates, func(c cmCertificate) bool {
			return c.Metadata.Namespace == d.Namespace && slices.Contains(c.Spec.Usages, "client auth")
		}) {
			t.Errorf("no client Certificate in fluent-bit's namespace %q", d.Namespace)
		}
	}
}

// fluentBitVhost is the output's tls.vhost in deploy/fluent-bit/fluent-bit.yaml.
func fluentBitVhost(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(manifest.Dir("fluent-bit", "fluent-bit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range parseFluentBit(t, b).Pipeline.Outputs {
		if v := fluentBitString(o, "tls.vhost"); v != "" {
			return v
		}
	}
	t.Fatal("deploy/fluent-bit/fluent-bit.yaml: no output sets tls.vhost")
	return ""
}

// mountRef is a Secret or ConfigMap a volume reads, and the keys it reads.
type mountRef struct {
	secret, configMap string
	keys              []string
}

func itemKeys(items []corev1.KeyToPath) []string {
	var out []string
	for _, i := range items {
		out = append(out, i.Key)
	}
	return out
}

// selects: a non-empty matchLabels selector matches labels.
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}
