// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// Proof for deploy/components/cert-manager, deploy/components/alerts and
// deploy/overlays/platform without a cluster: the Secrets and ConfigMap the pods
// mount are the ones cert-manager and trust-manager write. The same overlay applied
// server-side to a kube-apiserver with the real CRDs is TestKubeCertManagerComponent
// in test/e2e.

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

type matchExpression struct {
	Key, Operator string
	Values        []string
}

type tmBundle struct {
	Target struct {
		ConfigMap         struct{ Key string } `json:"configMap"`
		NamespaceSelector struct {
			MatchExpressions []matchExpression `json:"matchExpressions"`
		} `json:"namespaceSelector"`
	} `json:"target"`
}

// certManagerObjects are the cert-manager and trust-manager objects of a rendering.
type certManagerObjects struct {
	certificates   []cmCertificate
	clusterIssuers map[string]cmClusterIssuer
	bundles        map[string]tmBundle
	sts            []appsv1.StatefulSet
	ds             []appsv1.DaemonSet
}

func renderCertManager(t *testing.T, dir string) certManagerObjects {
	t.Helper()
	r := certManagerObjects{clusterIssuers: map[string]cmClusterIssuer{}, bundles: map[string]tmBundle{}}
	for _, doc := range manifest.Docs(t, dir) {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		switch head.Kind {
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
	}
	return r
}

var clusterScoped = map[string]bool{"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "ClusterIssuer": true, "Bundle": true}

// TestDeployCertManagerWiring checks, without a cluster, that the certificates
// land where the manifests read them: every keypair Secret the gateway and the
// agents mount is a Certificate's secretName in the same namespace, with the keys
// cert-manager writes; the CA ConfigMap is the trust-manager Bundle's target in
// their namespace and fluent-bit's; fluent-bit's Certificate is in the namespace
// deploy/fluent-bit installs its config into; the serving certificate covers the
// names fluent-bit and the agents dial; and each issuer chain resolves.
func TestDeployCertManagerWiring(t *testing.T) {
	r := renderCertManager(t, manifest.Dir("overlays", "platform"))
	secrets := map[string]string{} // namespace/secretName -> Certificate
	for _, c := range r.certificates {
		secrets[c.Metadata.Namespace+"/"+c.Spec.SecretName] = c.Metadata.Name
		ci, ok := r.clusterIssuers[c.Spec.IssuerRef.Name]
		if c.Spec.IssuerRef.Kind != "ClusterIssuer" || !ok {
			t.Errorf("Certificate %s: issuer %s/%s is not a ClusterIssuer of the component", c.Metadata.Name, c.Spec.IssuerRef.Kind, c.Spec.IssuerRef.Name)
			continue
		}
		if ci.CA != nil {
			// A CA ClusterIssuer reads its Secret from cert-manager's namespace.
			if _, ok := secrets["cert-manager/"+ci.CA.SecretName]; !ok && !slices.ContainsFunc(r.certificates, func(ca cmCertificate) bool {
				return ca.Spec.IsCA && ca.Metadata.Namespace == "cert-manager" && ca.Spec.SecretName == ci.CA.SecretName
			}) {
				t.Errorf("ClusterIssuer %s reads Secret %s, which no isCA Certificate in namespace cert-manager writes", c.Spec.IssuerRef.Name, ci.CA.SecretName)
			}
		}
	}

	var checked int
	check := func(kind, ns string, spec corev1.PodSpec) {
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
					if _, ok := secrets[ns+"/"+ref.secret]; !ok {
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
					if !bundleTargets(b.Target.NamespaceSelector.MatchExpressions, ns) {
						t.Errorf("Bundle %s does not target namespace %s, where %s mounts it", ref.configMap, ns, kind)
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
	}
	for _, s := range r.sts {
		check("StatefulSet "+s.Name, s.Namespace, s.Spec.Template.Spec)
	}
	for _, d := range r.ds {
		check("DaemonSet "+d.Name, d.Namespace, d.Spec.Template.Spec)
	}
	if checked < 4 {
		t.Errorf("only %d certificate mounts checked; want the receiver keypair, the CA bundle (gateway and agents) and the agents' keypair", checked)
	}

	// fluent-bit: its Certificate sits where deploy/fluent-bit puts its config,
	// the Bundle reaches that namespace, and the serving certificate covers the
	// name fluent-bit verifies (Tls.vhost) and the agents' gateway address.
	fbKust, err := os.ReadFile(manifest.Dir("fluent-bit", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var fb struct{ Namespace string }
	manifest.UnmarshalLoose(t, string(fbKust), &fb)
	fbConf, err := os.ReadFile(manifest.Dir("fluent-bit", "fluent-bit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var fbYAML struct {
		Pipeline struct {
			Outputs []map[string]any `json:"outputs"`
		} `json:"pipeline"`
	}
	manifest.UnmarshalLoose(t, string(fbConf), &fbYAML)
	var vhost string
	for _, o := range fbYAML.Pipeline.Outputs {
		if v, ok := o["tls.vhost"].(string); ok {
			vhost = v
		}
	}
	if vhost == "" {
		t.Fatal("deploy/fluent-bit/fluent-bit.yaml: no output sets tls.vhost")
	}
	// fluent-bit expands ${VAR} from its container's environment.
	_, fbDS := fluentBitDaemonSet(t)
	fbEnv := manifest.Env(fbDS.Namespace, fbDS.Spec.Template.Spec.Containers[0])
	vhost = os.Expand(vhost, func(k string) string { return fbEnv[k] })
	var agentGateway string
	for _, d := range r.ds {
		if v, ok := manifest.Env(d.Namespace, d.Spec.Template.Spec.Containers[0])["OTELCOL_RELAY_GATEWAY"]; ok {
			agentGateway = v[:strings.LastIndexByte(v, ':')]
		}
	}
	var fbCert, serving bool
	for _, c := range r.certificates {
		if c.Metadata.Namespace == fb.Namespace && slices.Contains(c.Spec.Usages, "client auth") {
			fbCert = true
		}
		if slices.Contains(c.Spec.Usages, "server auth") {
			serving = true
			for _, host := range []string{vhost, agentGateway} {
				if host == "" || !slices.Contains(c.Spec.DNSNames, host) {
					t.Errorf("serving Certificate %s (dnsNames %v) does not cover %q (fluent-bit's Tls.vhost / the agents' OTELCOL_RELAY_GATEWAY)", c.Metadata.Name, c.Spec.DNSNames, host)
				}
			}
		}
	}
	if !fbCert {
		t.Errorf("no client Certificate in fluent-bit's namespace %q", fb.Namespace)
	}
	if !serving {
		t.Error("no serving Certificate for the gateway's receiver")
	}
	for name, b := range r.bundles {
		if !bundleTargets(b.Target.NamespaceSelector.MatchExpressions, fb.Namespace) {
			t.Errorf("Bundle %s does not reach fluent-bit's namespace %s", name, fb.Namespace)
		}
	}
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

func bundleTargets(exprs []matchExpression, ns string) bool {
	if len(exprs) == 0 {
		return true
	}
	for _, e := range exprs {
		if e.Key != "kubernetes.io/metadata.name" || e.Operator != "In" || !slices.Contains(e.Values, ns) {
			return false
		}
	}
	return true
}
