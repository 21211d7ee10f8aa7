package e2e_test

// Proofs for deploy/: the manifests apply to a real kube-apiserver (and apply again
// as a no-op), the ServiceAccounts can do exactly what the components need, and the
// collector configs they embed enrich data with Kubernetes metadata and read a
// kubelet, running the built binary with the ServiceAccount tokens those manifests
// grant. The API server and etcd come from `hack/kube-peers.sh` (bin/).

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"sigs.k8s.io/yaml"
)

var overlays = []string{"aks", "tigera", "example-backend"}

func deployDir(parts ...string) string {
	return filepath.Join(append([]string{e2e.RepoRoot(), "deploy"}, parts...)...)
}

// rendered is one overlay as kustomize builds it.
type rendered struct {
	configMaps   map[string]corev1.ConfigMap
	statefulSets []appsv1.StatefulSet
	daemonSets   []appsv1.DaemonSet
	hpas         []autoscalingv2.HorizontalPodAutoscaler
	pdbs         []policyv1.PodDisruptionBudget
	services     []corev1.Service
}

func kustomize(t *testing.T, dir string) rendered {
	t.Helper()
	out, err := execOutput("kubectl", "kustomize", dir)
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, out)
	}
	r := rendered{configMaps: map[string]corev1.ConfigMap{}}
	for _, doc := range strings.Split(out, "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		switch meta.Kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			mustUnmarshal(t, doc, &cm)
			r.configMaps[cm.Name] = cm
		case "StatefulSet":
			var s appsv1.StatefulSet
			mustUnmarshal(t, doc, &s)
			r.statefulSets = append(r.statefulSets, s)
		case "DaemonSet":
			var d appsv1.DaemonSet
			mustUnmarshal(t, doc, &d)
			r.daemonSets = append(r.daemonSets, d)
		case "HorizontalPodAutoscaler":
			var h autoscalingv2.HorizontalPodAutoscaler
			mustUnmarshal(t, doc, &h)
			r.hpas = append(r.hpas, h)
		case "PodDisruptionBudget":
			var p policyv1.PodDisruptionBudget
			mustUnmarshal(t, doc, &p)
			r.pdbs = append(r.pdbs, p)
		case "Service":
			var svc corev1.Service
			mustUnmarshal(t, doc, &svc)
			r.services = append(r.services, svc)
		}
	}
	return r
}

func mustUnmarshal(t *testing.T, doc string, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
}

// TestDeployConfigsValidate runs `otelcol-relay validate` on every collector the
// overlays deploy, exactly as the pod would start it: the args from the manifest,
// the config files from the generated ConfigMap, and the environment the manifest
// sets (values from Secrets and ConfigMaps replaced by placeholders, envFrom
// ConfigMaps as rendered). A variable the config needs but the manifest forgets
// fails here, not in a cluster. StatefulSets with a fixed replica count (the
// federation shards) are validated for every pod index.
func TestDeployConfigsValidate(t *testing.T) {
	for _, o := range append([]string{"../base", "../agent"}, overlays...) {
		validateOverlay(t, deployDir("overlays", o))
	}
	validateOverlay(t, shardedOverlay(t))
}

func validateOverlay(t *testing.T, dir string) {
	t.Helper()
	r := kustomize(t, dir)
	type instance struct {
		name  string
		spec  corev1.PodSpec
		index string
	}
	var pods []instance
	for _, s := range r.statefulSets {
		n := int32(1) // the relay: the HPA sets replicas, its config does not depend on the index
		if s.Spec.Replicas != nil {
			n = *s.Spec.Replicas
		}
		for i := range n {
			pods = append(pods, instance{fmt.Sprintf("%s-%d", s.Name, i), s.Spec.Template.Spec, fmt.Sprint(i)})
		}
	}
	for _, d := range r.daemonSets {
		pods = append(pods, instance{d.Name, d.Spec.Template.Spec, ""})
	}
	if len(pods) == 0 {
		t.Fatalf("%s renders no StatefulSet or DaemonSet", dir)
	}
	for _, p := range pods {
		t.Run(filepath.Base(dir)+"/"+p.name, func(t *testing.T) {
			args, env := podCommand(t, r, p.spec, p.index)
			// Components check the ServiceAccount files a pod has at validate time.
			env = append(env, e2e.InPod(t, "validate-token", testcerts.NewCA(t, "validate").CertPEM, "127.0.0.1", "6443")...)
			if out, code := e2e.Run(t, 2*time.Minute, env, append([]string{"validate"}, args...)...); code != 0 {
				t.Fatalf("validate %v (exit %d):\n%s", args, code, out)
			}
		})
	}
}

// shardedOverlay is deploy/base with deploy/components/federation-shards, the way
// a user's overlay includes it.
func shardedOverlay(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	rel := func(p string) string {
		r, err := filepath.Rel(dir, p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s]\ncomponents: [%s]\n",
		rel(deployDir("base")), rel(deployDir("components", "federation-shards")))
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// podCommand turns a pod spec's container into arguments and environment that run
// here: config files come out of the mounted ConfigMap into a temp dir, envFrom
// ConfigMaps are read from the overlay, and the StatefulSet pod index label is
// podIndex.
func podCommand(t *testing.T, r rendered, spec corev1.PodSpec, podIndex string) ([]string, []string) {
	t.Helper()
	c := spec.Containers[0]
	mounts := map[string]string{} // mount path -> ConfigMap name
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				mounts[m.MountPath] = v.ConfigMap.Name
			}
		}
	}
	dir := t.TempDir()
	var args []string
	for _, a := range c.Args {
		p, ok := strings.CutPrefix(a, "--config=")
		if !ok {
			args = append(args, a)
			continue
		}
		cmName, found := mounts[filepath.Dir(p)]
		if !found {
			t.Fatalf("%s is not in a mounted ConfigMap", p)
		}
		cm, found := r.configMaps[cmName]
		if !found {
			t.Fatalf("ConfigMap %s is not in the overlay", cmName)
		}
		data, found := cm.Data[filepath.Base(p)]
		if !found {
			t.Fatalf("ConfigMap %s has no key %s", cmName, filepath.Base(p))
		}
		local := filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(local, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", local)
	}
	var env []string
	// envFrom first: an env entry of the same name wins, as in the kubelet.
	for _, from := range c.EnvFrom {
		if sr := from.SecretRef; sr != nil && sr.Optional != nil && *sr.Optional {
			// A Secret the user creates (header values); the kubelet starts the
			// pod without it, and so does this test: nothing secret is in deploy/.
			continue
		}
		if from.ConfigMapRef == nil {
			t.Fatalf("envFrom %+v: only ConfigMaps and optional Secrets are expected", from)
		}
		cm, found := r.configMaps[from.ConfigMapRef.Name]
		if !found {
			t.Fatalf("envFrom ConfigMap %s is not in the overlay", from.ConfigMapRef.Name)
		}
		for _, k := range keys(cm.Data) {
			env = append(env, from.Prefix+k+"="+cm.Data[k])
		}
	}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			switch {
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.labels['apps.kubernetes.io/pod-index']":
				v = podIndex
			case e.ValueFrom.FieldRef != nil:
				v = "127.0.0.1"
				if strings.HasSuffix(e.ValueFrom.FieldRef.FieldPath, "Name") || e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
					v = "node-a"
				}
			case strings.HasSuffix(e.Name, "_ENDPOINT"):
				v = "https://backend.example.com:4317"
			case e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Optional != nil && *e.ValueFrom.ConfigMapKeyRef.Optional:
				continue // absent, as when the optional ConfigMap does not exist
			default:
				v = "placeholder-from-" + e.Name
			}
		}
		env = append(env, e.Name+"="+v)
	}
	return args, env
}

// TestKubeDeployApply applies every overlay to a real API server twice: the first
// apply creates everything, the second changes nothing (no resourceVersion moves,
// and `kubectl diff --server-side` finds no difference).
func TestKubeDeployApply(t *testing.T) {
	k := e2e.StartKube(t)
	installServiceMonitorCRD(t, k)

	for _, o := range overlays {
		dir := deployDir("overlays", o)
		out := k.MustKubectl(t, "apply", "--server-side", "--field-manager=otelcol-relay-e2e", "-k", dir)
		t.Logf("%s: first apply:\n%s", o, out)
		before := resourceVersions(t, k, dir)
		if len(before) < 8 {
			t.Fatalf("%s: only %d objects after apply: %v", o, len(before), before)
		}
		k.MustKubectl(t, "apply", "--server-side", "--field-manager=otelcol-relay-e2e", "-k", dir)
		after := resourceVersions(t, k, dir)
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("%s: second apply changed objects:\nbefore %v\nafter  %v", o, before, after)
		}
		if out, err := k.Kubectl(t, "diff", "--server-side", "--field-manager=otelcol-relay-e2e", "-k", dir); err != nil {
			t.Errorf("%s: kubectl diff after apply reports a difference (%v):\n%s", o, err, out)
		}
	}

	// What the apply produced, checked where a mistake is silent in a cluster.
	ctx := context.Background()
	sts, err := k.Client.AppsV1().StatefulSets("otelcol-relay").Get(ctx, "otelcol-relay", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkGatewayPod(t, sts)
	fed, err := k.Client.AppsV1().StatefulSets("otelcol-relay").Get(ctx, "otelcol-relay-federation", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := fed.Spec.Replicas; r == nil || *r != 1 {
		t.Errorf("federation replicas = %v, want exactly 1", r)
	}
	// The HPA and PDBs as the API server stored them (defaults applied), for the
	// relay of each namespace.
	for ns, relay := range map[string]string{"otelcol-relay": "otelcol-relay"} {
		hpa, err := k.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "otelcol-relay", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", ns, err)
		}
		if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "StatefulSet" || ref.Name != relay {
			t.Errorf("%s: HPA scales %s/%s, want StatefulSet/%s", ns, ref.Kind, ref.Name, relay)
		}
		if _, err := k.Client.AppsV1().StatefulSets(ns).Get(ctx, hpa.Spec.ScaleTargetRef.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: the HPA's target: %v", ns, err)
		}
		if m := hpa.Spec.MinReplicas; m == nil || *m != 2 || hpa.Spec.MaxReplicas < 2 {
			t.Errorf("%s: HPA min %v max %d, want min 2", ns, m, hpa.Spec.MaxReplicas)
		}
		pdbs, err := k.Client.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pdbs.Items) != 2 {
			t.Errorf("%s: %d PodDisruptionBudgets, want the relay's and federation's", ns, len(pdbs.Items))
		}
	}
	checkFederationToken(t, "base federation", fed)
	agentSvc, err := k.Client.CoreV1().Services("otelcol-relay").Get(context.Background(), "otelcol-relay-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := agentSvc.Spec.InternalTrafficPolicy; p == nil || *p != corev1.ServiceInternalTrafficPolicyLocal {
		t.Errorf("agent Service internalTrafficPolicy = %v, want Local", p)
	}
}

func checkGatewayPod(t *testing.T, sts *appsv1.StatefulSet) {
	t.Helper()
	// Without a controller-manager nothing scales it: the default of a
	// StatefulSet whose manifest leaves replicas to the HPA.
	if r := sts.Spec.Replicas; r == nil || *r != 1 {
		t.Errorf("relay replicas = %v, want the default 1 (the manifest sets none)", r)
	}
	spec := sts.Spec.Template.Spec
	if fs := spec.SecurityContext.FSGroup; fs == nil || *fs != 10001 {
		t.Errorf("fsGroup = %v, want 10001 (the queue volume must be writable by uid 10001)", fs)
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || *sc.RunAsUser != 10001 || *sc.RunAsGroup != 10001 ||
		!*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container securityContext is not the hardened one: %+v", sc)
	}
	for _, m := range c.VolumeMounts {
		if m.SubPath != "" || m.SubPathExpr != "" {
			t.Errorf("volume mount %s uses subPath: rotated files would never reach the collector", m.Name)
		}
	}
	if got := c.Resources.Requests.Memory().String() + "/" + c.Resources.Limits.Memory().String(); got != "256Mi/512Mi" {
		t.Errorf("memory request/limit = %s, want 256Mi/512Mi", got)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("want one volumeClaimTemplate for the queue, got %d", len(sts.Spec.VolumeClaimTemplates))
	}
}

// checkFederationToken: the token federation sends to its target is a projected
// ServiceAccount token of its own with a short expiry, not the pod's API token
// (valid an hour, which the API server may extend to a year).
func checkFederationToken(t *testing.T, name string, sts *appsv1.StatefulSet) {
	t.Helper()
	spec := sts.Spec.Template.Spec
	c := spec.Containers[0]
	file := ""
	for _, e := range c.Env {
		if e.Name == "RELAY_FEDERATION_TOKEN_FILE" {
			file = e.Value
		}
	}
	if file == "" {
		t.Errorf("%s: RELAY_FEDERATION_TOKEN_FILE is not set: federation sends the pod's API token", name)
		return
	}
	for _, m := range c.VolumeMounts {
		if filepath.Dir(file) != m.MountPath {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.Projected == nil {
				continue
			}
			for _, src := range v.Projected.Sources {
				if sat := src.ServiceAccountToken; sat != nil && sat.Path == filepath.Base(file) {
					if sat.ExpirationSeconds == nil || *sat.ExpirationSeconds > 900 {
						t.Errorf("%s: federation token expires after %v s, want at most 900", name, sat.ExpirationSeconds)
					}
					return
				}
			}
		}
	}
	t.Errorf("%s: RELAY_FEDERATION_TOKEN_FILE %s is not a projected serviceAccountToken", name, file)
}

func resourceVersions(t *testing.T, k *e2e.Kube, dir string) []string {
	t.Helper()
	out := k.MustKubectl(t, "get", "-k", dir, "-o", `jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}`)
	lines := strings.Fields(out)
	sort.Strings(lines)
	return lines
}

func installServiceMonitorCRD(t *testing.T, k *e2e.Kube) {
	t.Helper()
	// The prometheus-operator CRD, reduced to what the API server needs to store
	// a ServiceMonitor.
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`
	p := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(p, []byte(crd), 0o600); err != nil {
		t.Fatal(err)
	}
	k.MustKubectl(t, "apply", "--server-side", "-f", p)
	k.MustKubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/servicemonitors.monitoring.coreos.com")
}

// TestKubeDeployRBAC: as each ServiceAccount (relay, federation, agent), `kubectl
// auth can-i --list` shows exactly the rules the components need, and every write
// and every secret read is denied.
func TestKubeDeployRBAC(t *testing.T) {
	k := e2e.StartKube(t)
	installServiceMonitorCRD(t, k)
	for _, o := range overlays {
		if o == "tigera" {
			continue // its one extra rule (services/proxy) is checked by TestKubeTigeraOverlay
		}
		k.MustKubectl(t, "apply", "--server-side", "-k", deployDir("overlays", o))
	}

	// Only what the informers k8s_attributes starts need: pods, list and watch.
	informers := []string{"list", "watch"}
	cases := map[string]map[string][]string{
		"system:serviceaccount:otelcol-relay:otelcol-relay": {
			"pods": informers,
		},
		"system:serviceaccount:otelcol-relay:otelcol-relay-agent": {
			"pods": informers, "nodes/stats": {"get"},
		},
		// Federation reads nothing from the API server: no rule beyond what every
		// ServiceAccount has.
		"system:serviceaccount:otelcol-relay:otelcol-relay-federation": {},
	}
	for user, want := range cases {
		t.Run(user, func(t *testing.T) {
			got := canIList(t, k, user)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("rules for %s:\n got  %v\n want %v", user, got, want)
			}
			for _, q := range [][]string{
				{"get", "secrets"}, {"list", "secrets"}, {"watch", "secrets"}, {"get", "secrets", "-n", "kube-system"},
				{"get", "configmaps"}, {"create", "pods"}, {"update", "pods"}, {"patch", "pods"}, {"delete", "pods"},
				{"create", "pods/eviction"}, {"update", "nodes"}, {"patch", "nodes"}, {"delete", "namespaces"},
				{"create", "serviceaccounts/token"}, {"get", "nodes/proxy"}, {"create", "nodes/stats"},
				{"update", "replicasets.apps"}, {"create", "deployments.apps"}, {"*", "*"},
				{"get", "pods"}, {"list", "namespaces"}, {"list", "nodes"}, {"list", "replicasets.apps"},
			} {
				if allowed := canI(t, k, user, q...); allowed {
					t.Errorf("%s can %v; it must not", user, q)
				}
			}
			for res, verbs := range want {
				for _, v := range verbs {
					if !canI(t, k, user, v, res) {
						t.Errorf("%s cannot %s %s; the components need it", user, v, res)
					}
				}
			}
		})
	}
}

func canI(t *testing.T, k *e2e.Kube, user string, q ...string) bool {
	t.Helper()
	// kubectl reads "nodes/stats" as the node named stats: subresources go in a flag.
	args := []string{"auth", "can-i", "--as=" + user}
	for _, a := range q {
		if res, sub, ok := strings.Cut(a, "/"); ok && !strings.HasPrefix(a, "-") {
			args = append(args, res, "--subresource="+sub)
			continue
		}
		args = append(args, a)
	}
	out, err := k.Kubectl(t, args...)
	// The answer is the last line; warnings (e.g. "not namespace scoped") come first.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	switch strings.TrimSpace(lines[len(lines)-1]) {
	case "yes":
		return true
	case "no":
		return false
	}
	t.Fatalf("kubectl auth can-i %v: %v\n%s", q, err, out)
	return false
}

var verbsColumn = regexp.MustCompile(`\[([^\]]*)\]\s*$`)

// canIList returns the resource rules kubectl auth can-i --list shows for user,
// less those every ServiceAccount has from the default bootstrap policy (the rules
// of a ServiceAccount that nothing is bound to).
func canIList(t *testing.T, k *e2e.Kube, user string) map[string][]string {
	t.Helper()
	baseline := rulesOf(t, k, "system:serviceaccount:default:e2e-nobody")
	rules := map[string][]string{}
	for res, verbs := range rulesOf(t, k, user) {
		if fmt.Sprint(baseline[res]) != fmt.Sprint(verbs) {
			rules[res] = verbs
		}
	}
	return rules
}

func rulesOf(t *testing.T, k *e2e.Kube, user string) map[string][]string {
	t.Helper()
	out := k.MustKubectl(t, "auth", "can-i", "--list", "--as="+user)
	rules := map[string][]string{}
	for _, line := range strings.Split(out, "\n")[1:] {
		f := strings.Fields(line)
		m := verbsColumn.FindStringSubmatch(line)
		if len(f) < 2 || m == nil || strings.HasPrefix(f[0], "[") {
			continue // non-resource URL rules
		}
		verbs := strings.Fields(m[1])
		sort.Strings(verbs)
		rules[f[0]] = verbs
	}
	return rules
}

// cluster is the API server with the aks overlay applied and a Deployment's pods.
type cluster struct {
	k        *e2e.Kube
	ns       string
	node     string
	rsUID    types.UID
	rsName   string
	dirCerts string
}

type pod struct {
	name string
	uid  string
	ip   string
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	k := e2e.StartKube(t)
	k.MustKubectl(t, "apply", "--server-side", "-k", deployDir("overlays", "aks"))
	c := &cluster{k: k, ns: "payments", node: "node-a", dirCerts: t.TempDir()}
	ctx := context.Background()
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "checkout"}
	replicas := int32(2)
	dep, err := k.Client.AppsV1().Deployments(c.ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No controller-manager runs: create the ReplicaSet the Deployment controller would.
	rsLabels := map[string]string{"app": "checkout", "pod-template-hash": "7d9f8b6c5"}
	rs, err := k.Client.AppsV1().ReplicaSets(c.ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "checkout-7d9f8b6c5",
			Labels:          rsLabels,
			OwnerReferences: []metav1.OwnerReference{ownerRef("apps/v1", "Deployment", dep.Name, dep.UID)},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: rsLabels},
			Template: podTemplate(rsLabels),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.rsUID, c.rsName = rs.UID, rs.Name
	return c
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "checkout", Image: "checkout:1"}}},
	}
}

func ownerRef(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &yes, BlockOwnerDeletion: &yes}
}

// addPod creates a pod of the ReplicaSet on the node and sets its IP through the
// status subresource, as the kubelet does.
func (c *cluster) addPod(t *testing.T, suffix, ip string) pod {
	t.Helper()
	ctx := context.Background()
	p, err := c.k.Client.CoreV1().Pods(c.ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            c.rsName + "-" + suffix,
			Labels:          map[string]string{"app": "checkout", "pod-template-hash": "7d9f8b6c5"},
			OwnerReferences: []metav1.OwnerReference{ownerRef("apps/v1", "ReplicaSet", c.rsName, c.rsUID)},
		},
		Spec: corev1.PodSpec{NodeName: c.node, Containers: []corev1.Container{{Name: "checkout", Image: "checkout:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	p.Status.HostIP = "127.0.0.1"
	p.Status.StartTime = &metav1.Time{Time: time.Now()}
	if _, err := c.k.Client.CoreV1().Pods(c.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pod{name: p.Name, uid: string(p.UID), ip: ip}
}

// tlsFiles writes a CA bundle and a client keypair from the cluster's CA, the shape
// of the projected certwatch directories the manifests mount.
func (c *cluster) tlsFiles(t *testing.T, name string) (ca, cert, key string) {
	t.Helper()
	dir := filepath.Join(c.dirCerts, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kp := c.k.CA.Peer(t, testcerts.Options{CommonName: name})
	ca, cert, key = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for p, b := range map[string][]byte{ca: c.k.CA.CertPEM, cert: kp.CertPEM, key: kp.KeyPEM} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ca, cert, key
}

// tlsSink is an OTLP sink serving a certificate from the cluster's CA.
func (c *cluster) tlsSink(t *testing.T) *e2e.Sink {
	t.Helper()
	kp := c.k.CA.Server(t, testcerts.Options{CommonName: "sink"})
	return e2e.NewSink(t, e2e.SinkOptions{TLS: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{kp.TLSCertificate(t)}}})
}

// agentEnv is the environment the DaemonSet of overlay gives the agent (from the
// rendered manifest), with the downward-API and file values pointed at this test.
func agentEnv(t *testing.T, overlayDir string, over map[string]string) []string {
	t.Helper()
	r := kustomize(t, overlayDir)
	if len(r.daemonSets) != 1 {
		t.Fatalf("%s renders %d DaemonSets, want 1", overlayDir, len(r.daemonSets))
	}
	var env []string
	for _, e := range r.daemonSets[0].Spec.Template.Spec.Containers[0].Env {
		if _, ok := over[e.Name]; ok || e.ValueFrom != nil {
			continue
		}
		env = append(env, e.Name+"="+e.Value)
	}
	for k, v := range over {
		env = append(env, k+"="+v)
	}
	return env
}

// TestKubeAttributes runs the gateway and agent configs from deploy/ with the
// ServiceAccount tokens the manifests grant, against the API server, and checks that
// both the fluent-bit path (pod identity in resource or record attributes, at the
// gateway) and the app path (the connection's pod IP, at the agent) get the pod's
// Deployment, UID, node and namespace, also for a pod created after the start.
func TestKubeAttributes(t *testing.T) {
	c := newCluster(t)
	podIP1 := e2e.FreeLoopbackIP(t)
	first := c.addPod(t, "x2x4z", podIP1)

	env := c.k.InCluster(t, c.k.ServiceAccountToken(t, "otelcol-relay", "otelcol-relay"))
	gwSink := c.tlsSink(t)
	caFile, certFile, keyFile := c.tlsFiles(t, "gateway-backend")
	srvCA, srvCert, srvKey := c.tlsFiles(t, "gateway-receiver")
	gwHTTP := e2e.FreePort(t)
	tokenFile := filepath.Join(t.TempDir(), "federation-token")
	if err := os.WriteFile(tokenFile, []byte("unused"), 0o600); err != nil {
		t.Fatal(err)
	}
	gwEnv := append(env,
		"MY_POD_IP=127.0.0.1",
		fmt.Sprintf("RELAY_OTLP_HTTP_PORT=%d", gwHTTP),
		fmt.Sprintf("RELAY_OTLP_GRPC_PORT=%d", e2e.FreePort(t)),
		fmt.Sprintf("RELAY_HEALTH_PORT=%d", e2e.FreePort(t)),
		fmt.Sprintf("RELAY_PPROF_PORT=%d", e2e.FreePort(t)),
		fmt.Sprintf("RELAY_METRICS_PORT=%d", e2e.FreePort(t)),
		fmt.Sprintf("RELAY_DRAIN_PORT=%d", e2e.FreePort(t)),
		"RELAY_QUEUE_DIR="+filepath.Join(t.TempDir(), "queue"),
		"RELAY_FEDERATION_TARGET="+e2e.FreeAddr(t),
		"RELAY_FEDERATION_TOKEN_FILE="+tokenFile,
		"RELAY_FEDERATION_CA_FILE="+caFile,
		"RELAY_OTLP_TLS_CERT_FILE="+srvCert,
		"RELAY_OTLP_TLS_KEY_FILE="+srvKey,
		"RELAY_OTLP_CLIENT_CA_FILE="+srvCA,
		"OTEL_EXPORTER_DEFAULT_ENDPOINT=https://"+gwSink.HTTPAddr,
		"OTEL_EXPORTER_DEFAULT_AUTHORIZATION=Bearer e2e",
		"OTEL_EXPORTER_DEFAULT_CA_FILE="+caFile,
		"OTEL_EXPORTER_DEFAULT_CERT_FILE="+certFile,
		"OTEL_EXPORTER_DEFAULT_KEY_FILE="+keyFile,
	)
	gwArgs := []string{"--config", deployDir("base", "gateway.yaml")}
	gateway := e2e.Start(t, "", e2e.Options{Env: gwEnv, ReadyTimeout: 2 * time.Minute, Args: gwArgs})

	agentToken := c.k.ServiceAccountToken(t, "otelcol-relay", "otelcol-relay-agent")
	agentEnvBase := c.k.InCluster(t, agentToken)
	agentSink := c.tlsSink(t)
	aCA, aCert, aKey := c.tlsFiles(t, "agent-gateway")
	agentGRPC, agentMetrics := e2e.FreePort(t), e2e.FreePort(t)
	aEnv := append(agentEnvBase, agentEnv(t, deployDir("overlays", "aks"), map[string]string{
		"MY_POD_IP":               "127.0.0.1",
		"RELAY_OTLP_GRPC_PORT":    fmt.Sprint(agentGRPC),
		"RELAY_OTLP_HTTP_PORT":    fmt.Sprint(e2e.FreePort(t)),
		"RELAY_HEALTH_PORT":       fmt.Sprint(e2e.FreePort(t)),
		"RELAY_METRICS_PORT":      fmt.Sprint(agentMetrics),
		"K8S_NODE_NAME":           c.node,
		"K8S_NODE_IP":             e2e.FreeLoopbackIP(t), // no kubelet here: scrapes fail, logs still flow
		"OTELCOL_RELAY_GATEWAY":   agentSink.GRPCAddr,
		"RELAY_GATEWAY_CA_FILE":   aCA,
		"RELAY_GATEWAY_CERT_FILE": aCert,
		"RELAY_GATEWAY_KEY_FILE":  aKey,
	})...)
	agent := e2e.Start(t, "", e2e.Options{Env: aEnv, ReadyTimeout: 2 * time.Minute, Args: []string{"--config", deployDir("agent", "agent.yaml")}})

	// fluent-bit presents a client certificate the gateway's bundle verifies.
	fbCA, fbCert, fbKey := c.tlsFiles(t, "fluent-bit")
	fbPair, err := tls.LoadX509KeyPair(fbCert, fbKey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	caPEM, _ := os.ReadFile(fbCA)
	roots.AppendCertsFromPEM(caPEM)
	fluentBit := e2e.NewHTTPClient(fmt.Sprintf("https://127.0.0.1:%d", gwHTTP), &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{fbPair}, ServerName: "localhost"})

	sendFluentBit := func(p pod, mark string, onResource bool) error {
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.Body().SetStr("GET /checkout 200")
		lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
		lr.Attributes().PutStr("e2e.mark", mark)
		attrs := lr.Attributes() // what deploy/fluent-bit sends: record attributes
		if onResource {
			attrs = rl.Resource().Attributes()
		}
		attrs.PutStr("k8s.pod.name", p.name)
		attrs.PutStr("k8s.namespace.name", c.ns)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return fluentBit.SendLogs(ctx, ld, e2e.Encoding{})
	}
	sendApp := func(p pod, mark string, claims ...string) error {
		// An application's OTLP exporter, connecting from its pod IP through the
		// agent Service (internalTrafficPolicy: Local).
		cc, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", agentGRPC),
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(p.ip)}}
				return d.DialContext(ctx, "tcp", addr)
			}))
		if err != nil {
			return err
		}
		defer cc.Close()
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", "checkout")
		for i := 0; i+1 < len(claims); i += 2 {
			rl.Resource().Attributes().PutStr(claims[i], claims[i+1])
		}
		lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.Body().SetStr("order placed")
		lr.Attributes().PutStr("e2e.mark", mark)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return e2e.SendLogsGRPC(ctx, cc, ld)
	}

	want := func(p pod) map[string]string {
		return map[string]string{
			"k8s.pod.uid":         p.uid,
			"k8s.pod.name":        p.name,
			"k8s.namespace.name":  c.ns,
			"k8s.node.name":       c.node,
			"k8s.deployment.name": "checkout",
		}
	}
	// Informers sync after the start: resend until a record comes out enriched,
	// then require every field.
	check := func(name string, sink *e2e.Sink, p pod, send func(mark string) error) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		var last map[string]string
		for i := 0; time.Now().Before(deadline); i++ {
			mark := fmt.Sprintf("%s-%d", name, i)
			if err := send(mark); err != nil {
				t.Logf("%s: send: %v", name, err)
			}
			e2e.WaitFor(5*time.Second, func() bool {
				last = resourceOf(sink, mark)
				return last != nil && last["k8s.pod.uid"] != ""
			})
			if last != nil && last["k8s.pod.uid"] != "" {
				t.Logf("%s: after %d sends the sink has resource %v", name, i+1, last)
				for k, v := range want(p) {
					if last[k] != v {
						t.Errorf("%s: resource %s = %q, want %q (resource %v)", name, k, last[k], v, last)
					}
				}
				return
			}
		}
		t.Errorf("%s: no enriched record within 90s; last resource seen: %v\ngateway:\n%s\nagent:\n%s", name, last, tail(gateway.Output()), tail(agent.Output()))
	}

	check("fluent-bit-resource", gwSink, first, func(m string) error { return sendFluentBit(first, m, true) })
	check("fluent-bit-record", gwSink, first, func(m string) error { return sendFluentBit(first, m, false) })
	check("app-connection", agentSink, first, func(m string) error { return sendApp(first, m) })

	// A pod that did not exist when the collectors started.
	late := c.addPod(t, "k7q2m", e2e.FreeLoopbackIP(t))
	check("late-fluent-bit", gwSink, late, func(m string) error { return sendFluentBit(late, m, true) })
	check("late-app", agentSink, late, func(m string) error { return sendApp(late, m) })

	// A pod that claims another pod's identity (uid, name and a namespace of its
	// choice) ends up with its own: identity comes from the connection, and every
	// claim that disagreed is counted.
	check("app-claims-another-pod", agentSink, first, func(m string) error {
		return sendApp(first, m, "k8s.pod.uid", late.uid, "k8s.pod.name", late.name, "k8s.namespace.name", "kube-system")
	})
	for _, attr := range []string{"k8s.pod.uid", "k8s.pod.name", "k8s.namespace.name"} {
		addr := fmt.Sprintf("127.0.0.1:%d", agentMetrics)
		if !e2e.WaitFor(30*time.Second, func() bool {
			m, err := e2e.ScrapeSelfMetrics(addr)
			if err != nil {
				return false
			}
			n, _ := m.Sum("otelcol_processor_pod_identity_claims_overwritten", map[string]string{"attribute": attr, "outcome": "replaced"})
			return n >= 1
		}) {
			page := scrape(t, "http://"+addr+"/metrics")
			t.Errorf("agent metrics count no overwritten claim of %s:\n%s", attr, grepLines(page, "pod_identity"))
		}
	}

	// The gateway never associates by connection: a record naming no pod, sent from
	// a pod's IP, stays unenriched.
	if err := sendAnonymousFrom(t, fluentBit, "anonymous"); err != nil {
		t.Fatal(err)
	}
	if !e2e.WaitFor(30*time.Second, func() bool { return resourceOf(gwSink, "anonymous") != nil }) {
		t.Fatal("anonymous record never reached the sink")
	}
	if res := resourceOf(gwSink, "anonymous"); res["k8s.pod.uid"] != "" {
		t.Errorf("gateway enriched a record that names no pod: %v", res)
	}

	// The narrowed ClusterRoles (pods: list, watch) are all the started informers
	// need: an informer refused anything would say "forbidden" in the log.
	for name, col := range map[string]*e2e.Collector{"gateway": gateway, "agent": agent} {
		if lines := grepLines(col.Output(), "forbidden"); lines != "" {
			t.Errorf("%s was refused by the API server with the manifests' role:\n%s", name, lines)
		}
	}
	// And such a refusal does show: without the pods rule, the gateway's informer
	// logs its denied list.
	c.k.MustKubectl(t, "patch", "clusterrole", "otelcol-relay", "--type=json", `-p=[{"op": "remove", "path": "/rules/0"}]`)
	denied := e2e.Start(t, "", e2e.Options{Env: append(append([]string(nil), gwEnv...),
		fmt.Sprintf("RELAY_OTLP_HTTP_PORT=%d", e2e.FreePort(t)),
		fmt.Sprintf("RELAY_OTLP_GRPC_PORT=%d", e2e.FreePort(t)),
		fmt.Sprintf("RELAY_HEALTH_PORT=%d", e2e.FreePort(t)),
		fmt.Sprintf("RELAY_PPROF_PORT=%d", e2e.FreePort(t)),
		fmt.Sprintf("RELAY_METRICS_PORT=%d", e2e.FreePort(t)),
		fmt.Sprintf("RELAY_DRAIN_PORT=%d", e2e.FreePort(t)),
		"RELAY_QUEUE_DIR="+filepath.Join(t.TempDir(), "queue"),
	), ReadyTimeout: 2 * time.Minute, Args: gwArgs})
	if err := denied.WaitForOutput(`pods is forbidden`, 90*time.Second); err != nil {
		t.Errorf("no denied pods list in the log of a gateway without the pods rule: %v\n%s", err, tail(denied.Output()))
	} else {
		t.Logf("without the pods rule: %s", grepLines(denied.Output(), "forbidden"))
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func sendAnonymousFrom(t *testing.T, c *e2e.HTTPClient, mark string) error {
	t.Helper()
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr("no pod identity")
	lr.Attributes().PutStr("e2e.mark", mark)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.SendLogs(ctx, ld, e2e.Encoding{})
}

// resourceOf returns the resource attributes of the record marked mark, or nil.
func resourceOf(s *e2e.Sink, mark string) map[string]string {
	for _, ld := range s.Logs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			for j := 0; j < rl.ScopeLogs().Len(); j++ {
				lrs := rl.ScopeLogs().At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					if v, ok := lrs.At(k).Attributes().Get("e2e.mark"); ok && v.Str() == mark {
						out := map[string]string{}
						rl.Resource().Attributes().Range(func(k string, v pcommon.Value) bool {
							out[k] = v.AsString()
							return true
						})
						return out
					}
				}
			}
		}
	}
	return nil
}

func tail(s string) string {
	if len(s) > 6000 {
		return "..." + s[len(s)-6000:]
	}
	return s
}

// fakeKubelet serves /stats/summary over HTTPS with a certificate nobody trusts
// (as AKS kubelets do) and authorizes each request the way the kubelet does:
// TokenReview of the bearer token, then a SubjectAccessReview for get nodes/stats.
type fakeKubelet struct {
	mu         sync.Mutex
	authorized int
	denied     []string
}

func startFakeKubelet(t *testing.T, c *cluster, ip string, p pod) *fakeKubelet {
	t.Helper()
	// A certificate from a CA of its own that nobody trusts: what an AKS
	// kubelet's self-signed certificate amounts to for a verifying client.
	kp := testcerts.NewCA(t, c.node).Server(t, testcerts.Options{CommonName: c.node, IPs: []net.IP{net.ParseIP(ip)}})
	fk := &fakeKubelet{}
	now := metav1.NewTime(time.Now())
	u := func(v uint64) *uint64 { return &v }
	summary := statsv1alpha1.Summary{
		Node: statsv1alpha1.NodeStats{
			NodeName:  c.node,
			StartTime: metav1.NewTime(time.Now().Add(-time.Hour)),
			CPU:       &statsv1alpha1.CPUStats{Time: now, UsageNanoCores: u(250_000_000), UsageCoreNanoSeconds: u(9_000_000_000_000)},
			Memory:    &statsv1alpha1.MemoryStats{Time: now, UsageBytes: u(2 << 30), WorkingSetBytes: u(1 << 30), AvailableBytes: u(6 << 30), RSSBytes: u(900 << 20)},
		},
		Pods: []statsv1alpha1.PodStats{{
			PodRef:    statsv1alpha1.PodReference{Name: p.name, Namespace: c.ns, UID: p.uid},
			StartTime: metav1.NewTime(time.Now().Add(-time.Minute)),
			CPU:       &statsv1alpha1.CPUStats{Time: now, UsageNanoCores: u(20_000_000), UsageCoreNanoSeconds: u(5_000_000_000)},
			Memory:    &statsv1alpha1.MemoryStats{Time: now, UsageBytes: u(64 << 20), WorkingSetBytes: u(60 << 20), RSSBytes: u(50 << 20)},
			Containers: []statsv1alpha1.ContainerStats{{
				Name:      "checkout",
				StartTime: metav1.NewTime(time.Now().Add(-time.Minute)),
				CPU:       &statsv1alpha1.CPUStats{Time: now, UsageNanoCores: u(20_000_000), UsageCoreNanoSeconds: u(5_000_000_000)},
				Memory:    &statsv1alpha1.MemoryStats{Time: now, UsageBytes: u(64 << 20), WorkingSetBytes: u(60 << 20), RSSBytes: u(50 << 20)},
			}},
		}},
	}
	body, err := json.Marshal(summary)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/stats/summary", func(w http.ResponseWriter, r *http.Request) {
		if reason := fk.authorize(r, c); reason != "" {
			fk.mu.Lock()
			fk.denied = append(fk.denied, reason)
			fk.mu.Unlock()
			http.Error(w, reason, http.StatusForbidden)
			return
		}
		fk.mu.Lock()
		fk.authorized++
		fk.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "10250"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{kp.TLSCertificate(t)}}}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return fk
}

func (fk *fakeKubelet) authorize(r *http.Request, c *cluster) string {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "no bearer token"
	}
	ctx := r.Context()
	tr, err := c.k.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil || !tr.Status.Authenticated {
		return fmt.Sprintf("token not authenticated: %v %s", err, tr.Status.Error)
	}
	sar, err := c.k.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   tr.Status.User.Username,
		Groups: tr.Status.User.Groups,
		UID:    tr.Status.User.UID,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "get", Resource: "nodes", Subresource: "stats", Name: c.node,
		},
	}}, metav1.CreateOptions{})
	if err != nil || !sar.Status.Allowed {
		return fmt.Sprintf("%s may not get nodes/stats: %v %s", tr.Status.User.Username, err, sar.Status.Reason)
	}
	return ""
}

func (fk *fakeKubelet) counts() (int, []string) {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	return fk.authorized, append([]string(nil), fk.denied...)
}

// TestKubeKubeletStats: the agent's kubelet_stats against a kubelet with a
// self-signed certificate. With the base manifest's setting it refuses the
// certificate; with the AKS overlay's it reads /stats/summary, authorized by the
// agent ServiceAccount's token, and emits node, pod and container metrics that
// k8s_attributes enriches.
func TestKubeKubeletStats(t *testing.T) {
	c := newCluster(t)
	p := c.addPod(t, "x2x4z", e2e.FreeLoopbackIP(t))
	token := c.k.ServiceAccountToken(t, "otelcol-relay", "otelcol-relay-agent")

	run := func(t *testing.T, overlayDir string) (*e2e.Collector, *e2e.Sink, *fakeKubelet) {
		nodeIP := e2e.FreeLoopbackIP(t, 10250)
		kubelet := startFakeKubelet(t, c, nodeIP, p)
		sink := c.tlsSink(t)
		aCA, aCert, aKey := c.tlsFiles(t, "agent-gateway")
		env := append(c.k.InCluster(t, token), agentEnv(t, overlayDir, map[string]string{
			"MY_POD_IP":               "127.0.0.1",
			"RELAY_OTLP_GRPC_PORT":    fmt.Sprint(e2e.FreePort(t)),
			"RELAY_OTLP_HTTP_PORT":    fmt.Sprint(e2e.FreePort(t)),
			"RELAY_HEALTH_PORT":       fmt.Sprint(e2e.FreePort(t)),
			"RELAY_METRICS_PORT":      fmt.Sprint(e2e.FreePort(t)),
			"K8S_NODE_NAME":           c.node,
			"K8S_NODE_IP":             nodeIP,
			"OTELCOL_RELAY_GATEWAY":   sink.GRPCAddr,
			"RELAY_GATEWAY_CA_FILE":   aCA,
			"RELAY_GATEWAY_CERT_FILE": aCert,
			"RELAY_GATEWAY_KEY_FILE":  aKey,
		})...)
		col := e2e.Start(t, "", e2e.Options{Env: env, ReadyTimeout: 2 * time.Minute, Args: []string{"--config", deployDir("agent", "agent.yaml")}})
		return col, sink, kubelet
	}

	t.Run("base verifies the kubelet certificate", func(t *testing.T) {
		col, sink, kubelet := run(t, deployDir("agent"))
		if err := col.WaitForOutput("x509", 90*time.Second); err != nil {
			t.Fatalf("no certificate verification error from kubelet_stats: %v\n%s", err, tail(col.Output()))
		}
		if n, denied := kubelet.counts(); n != 0 || len(denied) != 0 {
			t.Errorf("the kubelet served %d requests (%v) although its certificate is untrusted", n, denied)
		}
		if names := metricNames(sink); len(names) != 0 {
			t.Errorf("metrics arrived although the kubelet could not be read: %v", names)
		}
	})

	t.Run("aks skips verification and sends the token", func(t *testing.T) {
		col, sink, kubelet := run(t, deployDir("overlays", "aks"))
		var names map[string]map[string]string
		ok := e2e.WaitFor(90*time.Second, func() bool {
			names = metricNames(sink)
			return hasPrefix(names, "k8s.node.") && hasPrefix(names, "k8s.pod.") && hasPrefix(names, "container.")
		})
		n, denied := kubelet.counts()
		if !ok {
			t.Fatalf("want node, pod and container metrics; got %v (kubelet served %d, denied %v)\n%s", keys(names), n, denied, tail(col.Output()))
		}
		if n == 0 || len(denied) != 0 {
			t.Errorf("kubelet served %d authorized requests, denied %v", n, denied)
		}
		res := names["k8s.pod.memory.usage"]
		if res == nil {
			t.Fatalf("no k8s.pod.memory.usage in %v", keys(names))
		}
		for k, v := range map[string]string{"k8s.pod.uid": p.uid, "k8s.pod.name": p.name, "k8s.namespace.name": c.ns, "k8s.deployment.name": "checkout", "k8s.node.name": c.node} {
			if res[k] != v {
				t.Errorf("pod metric resource %s = %q, want %q (%v)", k, res[k], v, res)
			}
		}
	})
}

// metricNames maps each metric name the sink saw to its resource attributes.
func metricNames(s *e2e.Sink) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, md := range s.Metrics() {
		rms := md.ResourceMetrics()
		for i := 0; i < rms.Len(); i++ {
			rm := rms.At(i)
			attrs := map[string]string{}
			rm.Resource().Attributes().Range(func(k string, v pcommon.Value) bool {
				attrs[k] = v.AsString()
				return true
			})
			forEachMetric(rm, func(m pmetric.Metric) { out[m.Name()] = attrs })
		}
	}
	return out
}

func forEachMetric(rm pmetric.ResourceMetrics, f func(pmetric.Metric)) {
	for j := 0; j < rm.ScopeMetrics().Len(); j++ {
		ms := rm.ScopeMetrics().At(j).Metrics()
		for k := 0; k < ms.Len(); k++ {
			f(ms.At(k))
		}
	}
}

func hasPrefix(names map[string]map[string]string, prefix string) bool {
	for n := range names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func execOutput(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.String(), err
}

// TestDeployFluentBitConfig checks deploy/fluent-bit against the facts of
// fluent-bit's opentelemetry output (architecture.md) and against the relay: a
// chunk goes as one request (batch_size), retries never give up and come back
// within a minute, the relay's name is verified, and the keys fluent-bit writes pod
// identity to are the keys the relay lifts into the resource, so k8s_attributes
// can associate relayed logs. fluent-bit itself cannot be installed here; the
// relay side of each fact is tested in test/reliability.
func TestDeployFluentBitConfig(t *testing.T) {
	raw, err := os.ReadFile(deployDir("fluent-bit", "fluent-bit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type props = map[string]any
	var fb struct {
		Service  props `json:"service"`
		Pipeline struct {
			Inputs, Filters, Outputs []props
		} `json:"pipeline"`
	}
	if err := yaml.UnmarshalStrict(raw, &fb); err != nil {
		t.Fatal(err)
	}
	// fluent-bit reads on/off/true/false alike; YAML 1.1 turns the bare words into booleans.
	str := func(p props, k string) string {
		switch v := p[k].(type) {
		case nil:
			return ""
		case bool:
			return map[bool]string{true: "on", false: "off"}[v]
		default:
			return fmt.Sprint(v)
		}
	}
	list := func(p props, k string) []string {
		var out []string
		switch v := p[k].(type) {
		case []any:
			for _, e := range v {
				out = append(out, strings.Join(strings.Fields(fmt.Sprint(e)), " "))
			}
		case nil:
		default:
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	num := func(p props, k string) int {
		n, err := strconv.Atoi(str(p, k))
		if err != nil {
			t.Errorf("%s = %q, want a number", k, str(p, k))
		}
		return n
	}

	if got := num(fb.Service, "scheduler.cap"); got > 120 {
		t.Errorf("service scheduler.cap = %d s: after an outage a chunk may wait that long to be retried; keep it at 2 minutes or less", got)
	}
	for _, in := range fb.Pipeline.Inputs {
		if got := str(in, "storage.type"); got != "filesystem" {
			t.Errorf("input %s storage.type = %q, want filesystem buffering", str(in, "name"), got)
		}
	}
	var renamed, removed []string
	for _, f := range fb.Pipeline.Filters {
		if str(f, "name") == "modify" {
			for _, r := range list(f, "rename") {
				renamed = append(renamed, strings.Fields(r)[1])
			}
			removed = append(removed, list(f, "remove")...)
		}
	}
	for _, k := range []string{"time", "_p"} {
		if !slices.Contains(removed, k) {
			t.Errorf("the modify filter keeps %q, which only repeats the record's timestamp or CRI framing", k)
		}
	}
	if len(fb.Pipeline.Outputs) != 1 {
		t.Fatalf("%d outputs, want the one opentelemetry output", len(fb.Pipeline.Outputs))
	}
	output := fb.Pipeline.Outputs[0]
	for k, want := range map[string]string{
		"name": "opentelemetry", "host": "otelcol-relay.otelcol-relay.svc", "port": "4318", "logs_uri": "/v1/logs",
		"tls": "on", "tls.verify": "on", "tls.verify_hostname": "on", "logs_body_key": "$log",
		"logs_body_key_attributes": "on", "retry_limit": "no_limits",
	} {
		if got := str(output, k); got != want {
			t.Errorf("output %s = %q, want %q", k, got, want)
		}
	}
	// The most records measured in one 2 MB chunk (architecture.md); the relay
	// accepts such a chunk whole (TestFluentBitChunkIsAcceptedOrRefusedWhole).
	if got := num(output, "batch_size"); got < 23970 {
		t.Errorf("output batch_size = %d: a chunk would be split into requests, and fluent-bit up to 4.2.8 drops a refused one that is not the last (#12384)", got)
	}

	var gw struct {
		Processors map[string]struct {
			Keys []string `json:"keys"`
		} `json:"processors"`
	}
	gwRaw, err := os.ReadFile(deployDir("base", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(gwRaw, &gw); err != nil {
		t.Fatal(err)
	}
	lifted := map[string]bool{}
	for name, p := range gw.Processors {
		if strings.HasPrefix(name, "groupbyattrs") {
			for _, k := range p.Keys {
				lifted[k] = true
			}
		}
	}
	for _, k := range []string{"k8s.pod.name", "k8s.namespace.name", "k8s.pod.uid"} {
		if !slices.Contains(renamed, k) {
			t.Errorf("fluent-bit does not write %s (renames to %v)", k, renamed)
		}
		if !lifted[k] {
			t.Errorf("the gateway's groupbyattrs does not lift %s into the resource (keys %v)", k, keys(lifted))
		}
	}
}

// TestDeployOverlayInvariants checks what each overlay renders where a mistake would
// be silent in a cluster: the ServiceMonitor comes only with the NetworkPolicy rule
// that lets Prometheus reach :8888 (and selects a Service with a metrics port), and
// kubelet certificate verification is skipped in the AKS overlay only.
func TestDeployOverlayInvariants(t *testing.T) {
	for _, o := range append([]string{"../base", "../agent"}, overlays...) {
		out, err := execOutput("kubectl", "kustomize", deployDir("overlays", o))
		if err != nil {
			t.Fatalf("%s: %v\n%s", o, err, out)
		}
		var monitors, metricsRules int
		var services []corev1.Service
		var monitorSelector map[string]string
		insecure := false
		for _, doc := range strings.Split(out, "\n---\n") {
			var obj metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatal(err)
			}
			switch obj.Kind {
			case "ServiceMonitor":
				monitors++
				var sm struct {
					Spec struct {
						Selector  metav1.LabelSelector `json:"selector"`
						Endpoints []struct {
							Port string `json:"port"`
						} `json:"endpoints"`
					} `json:"spec"`
				}
				if err := yaml.Unmarshal([]byte(doc), &sm); err != nil {
					t.Fatal(err)
				}
				monitorSelector = sm.Spec.Selector.MatchLabels
			case "NetworkPolicy":
				var np struct {
					Spec struct {
						Ingress []struct {
							Ports []struct {
								Port any `json:"port"`
							} `json:"ports"`
						} `json:"ingress"`
					} `json:"spec"`
				}
				if err := yaml.Unmarshal([]byte(doc), &np); err != nil {
					t.Fatal(err)
				}
				for _, in := range np.Spec.Ingress {
					for _, p := range in.Ports {
						if fmt.Sprint(p.Port) == "8888" || p.Port == "metrics" {
							metricsRules++
						}
					}
				}
			case "Service":
				var svc corev1.Service
				mustUnmarshal(t, doc, &svc)
				services = append(services, svc)
			case "DaemonSet":
				var ds appsv1.DaemonSet
				mustUnmarshal(t, doc, &ds)
				for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
					if e.Name == "KUBELET_INSECURE_SKIP_VERIFY" && e.Value != "false" {
						insecure = true
					}
				}
			}
		}
		if monitors != metricsRules {
			t.Errorf("%s: %d ServiceMonitors but %d NetworkPolicy rules opening :8888; they must come together", o, monitors, metricsRules)
		}
		if monitors > 0 {
			matched := 0
			for _, svc := range services {
				ok := true
				for k, v := range monitorSelector {
					ok = ok && svc.Labels[k] == v
				}
				if ok {
					matched++
					if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "metrics" }) {
						t.Errorf("%s: ServiceMonitor selects Service %s, which has no metrics port", o, svc.Name)
					}
				}
			}
			if matched != 1 {
				t.Errorf("%s: ServiceMonitor selector %v matches %d Services, want exactly 1 (each replica scraped once)", o, monitorSelector, matched)
			}
		}
		if insecure != (o == "aks") {
			t.Errorf("%s: kubelet certificate verification skipped = %v; only the aks overlay may skip it", o, insecure)
		}
	}
}
