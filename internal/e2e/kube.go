// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
	"github.com/otelcol-relay/otelcol-relay/internal/tb"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// KubePeersCommand is what builds the control-plane binaries the Kube tests need.
const KubePeersCommand = "hack/kube-peers.sh"

// Kubectl is the kubectl the tests drive (the machine's own).
const Kubectl = "kubectl"

// Kube is a real control plane for one test: etcd and kube-apiserver on loopback
// with RBAC on, a static token for an admin (system:masters) and a ServiceAccount
// signing key so TokenRequest works. No controller-manager or scheduler runs:
// objects stay exactly as the test writes them.
type Kube struct {
	// Server is the API server URL, https://127.0.0.1:<port>.
	Server string
	// Host and Port are the API server's address, as KUBERNETES_SERVICE_HOST and
	// KUBERNETES_SERVICE_PORT give them to a pod.
	Host, Port string
	// CAFile holds the PEM CA that signed the API server's serving certificate.
	CAFile string
	// Kubeconfig is a kubeconfig file for the admin user.
	Kubeconfig string
	// Client is a clientset for the admin user.
	Client *kubernetes.Clientset
	// CA can issue more certificates (a sink's, a kubelet's) from the same root.
	CA *testcerts.CA

	dir string
}

// PeerBinary returns bin/<name> in the repository, failing the test with the
// command that builds it when it is missing.
func PeerBinary(t tb.T, name string) string {
	t.Helper()
	p := filepath.Join(RepoRoot(), "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing (%v): build the Kubernetes test peers with `%s` (or `make test`, which runs it); it builds etcd and kube-apiserver from the Go module proxy into bin/", p, err, KubePeersCommand)
	}
	return p
}

// StartKube starts etcd and kube-apiserver and returns once the API server is
// ready. Both stop when the test ends.
func StartKube(t tb.T) *Kube {
	t.Helper()
	etcdBin := PeerBinary(t, "etcd")
	apiBin := PeerBinary(t, "kube-apiserver")
	if _, err := exec.LookPath(Kubectl); err != nil {
		t.Fatalf("kubectl is not on PATH: %v", err)
	}
	dir := t.TempDir()
	k := &Kube{dir: dir, Host: "127.0.0.1"}

	etcdClient := FreePort(t)
	etcdPeer := FreePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	etcdExited := StartProcess(t, "etcd", etcdBin,
		"--name=default",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	)
	if !otlpfixture.WaitFor(60*time.Second, func() bool {
		if etcdExited() {
			t.Fatalf("etcd exited during startup (its output follows)")
		}
		resp, err := http.Get(etcdURL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatalf("etcd at %s not healthy after 60s", etcdURL)
	}

	k.CA = testcerts.NewCA(t, "otelcol-relay e2e kube CA")
	k.CAFile = filepath.Join(dir, "ca.crt")
	testcerts.WriteFile(t, k.CAFile, k.CA.CertPEM)
	serving := k.CA.Server(t, testcerts.Options{
		CommonName: "kube-apiserver",
		DNSNames:   []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPs:        []net.IP{net.ParseIP("127.0.0.1")},
	})
	servingCert, servingKey := filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key")
	testcerts.WriteFile(t, servingCert, serving.CertPEM)
	testcerts.WriteFile(t, servingKey, serving.KeyPEM)

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	saDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		t.Fatal(err)
	}
	saKeyFile := filepath.Join(dir, "sa.key")
	testcerts.WriteFile(t, saKeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER}))

	token := randomToken(t)
	tokenFile := filepath.Join(dir, "tokens.csv")
	testcerts.WriteFile(t, tokenFile, []byte(token+`,e2e-admin,e2e-admin,"system:masters"`+"\n"))

	port := FreePort(t)
	k.Port = strconv.Itoa(port)
	k.Server = "https://127.0.0.1:" + k.Port
	apiExited := StartProcess(t, "kube-apiserver", apiBin,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The reconciler of the "kubernetes" Service endpoints refuses loopback
		// addresses; nothing here routes through that Service.
		"--endpoint-reconciler-type=none",
		"--secure-port="+k.Port,
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--tls-cert-file="+servingCert,
		"--tls-private-key-file="+servingKey,
		"--token-auth-file="+tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer="+k.Server,
		"--service-account-key-file="+saKeyFile,
		"--service-account-signing-key-file="+saKeyFile,
		"--service-cluster-ip-range=10.0.0.0/24",
		// No controller-manager creates the "default" ServiceAccount, so the
		// admission plugin that requires it would refuse every pod.
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--v=0",
	)

	cfg := &rest.Config{
		Host:            k.Server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: k.CA.CertPEM},
		QPS:             100,
		Burst:           200,
	}
	k.Client, err = kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	if !otlpfixture.WaitFor(120*time.Second, func() bool {
		if apiExited() {
			t.Fatalf("kube-apiserver exited during startup (its output follows)")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		body, err := k.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			last = err.Error() + " " + string(body)
			return false
		}
		return true
	}) {
		t.Fatalf("kube-apiserver at %s not ready after 120s: %s", k.Server, last)
	}

	k.Kubeconfig = filepath.Join(dir, "kubeconfig")
	testcerts.WriteFile(t, k.Kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: e2e-admin
  user:
    token: %s
contexts:
- name: e2e
  context:
    cluster: e2e
    user: e2e-admin
current-context: e2e
`, k.Server, base64.StdEncoding.EncodeToString(k.CA.CertPEM), token)))
	return k
}

// Kubectl runs kubectl against this API server and returns its combined output.
func (k *Kube) Kubectl(t tb.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Kubectl, append([]string{"--kubeconfig", k.Kubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// MustKubectl is Kubectl that fails the test on a non-zero exit.
func (k *Kube) MustKubectl(t tb.T, args ...string) string {
	t.Helper()
	out, err := k.Kubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// ServiceAccountToken issues a token for a ServiceAccount through the TokenRequest
// API, the way the kubelet does for a pod's projected token.
func (k *Kube) ServiceAccountToken(t tb.T, namespace, name string) string {
	t.Helper()
	exp := int64(3600)
	tr, err := k.Client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for serviceaccount %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

// InCluster makes collectors that e2e.Start launches from now on see what a pod
// sees: the ServiceAccount token and the cluster CA at
// /var/run/secrets/kubernetes.io/serviceaccount, and KUBERNETES_SERVICE_HOST/PORT
// naming this API server. So `auth_type: serviceAccount` runs unchanged, with the
// real RBAC of that ServiceAccount.
//
// Components read those files from a fixed path, so each collector runs in a
// private mount namespace (unshare, as root) with a tmpfs over /run holding them;
// the host's /run is untouched. It returns the environment to pass in
// Options.Env; the binary is swapped for a wrapper for the rest of the test.
func (k *Kube) InCluster(t *testing.T, token string) []string {
	t.Helper()
	return InPod(t, token, k.CA.CertPEM, k.Host, k.Port)
}

// InPod is InCluster for any token, CA and API server address (which need not
// answer, e.g. for `validate`).
func InPod(t *testing.T, token string, caPEM []byte, host, port string) []string {
	t.Helper()
	env, wrapper := InPodBinary(t, token, caPEM, host, port)
	t.Setenv(BinaryEnv, wrapper)
	return env
}

// InPodBinary is InPod for any harness (the benchmark's runner too): it returns
// the wrapper to run (Options.Binary) instead of setting it for the test.
func InPodBinary(t tb.T, token string, caPEM []byte, host, port string) (env []string, wrapper string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("running a collector with an in-cluster ServiceAccount needs root (a private mount namespace over /run); uid is %d", os.Geteuid())
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatalf("unshare (util-linux) is needed to give the collector a ServiceAccount mount: %v", err)
	}
	sa := t.TempDir()
	testcerts.WriteFile(t, filepath.Join(sa, "token"), []byte(token))
	testcerts.WriteFile(t, filepath.Join(sa, "ca.crt"), caPEM)
	testcerts.WriteFile(t, filepath.Join(sa, "namespace"), []byte("otelcol-relay"))

	bin := Binary(t)
	wrapper = filepath.Join(t.TempDir(), "otelcol-relay-incluster")
	script := `#!/bin/sh
# Runs the collector in a private mount namespace where the ServiceAccount files of
# $E2E_SA_DIR sit where a pod has them (and where deploy/ projects the federation token). exec keeps one PID for signals.
exec unshare --mount --propagation private -- /bin/sh -c '
set -e
mount -t tmpfs e2e-run /run
mkdir -p /run/secrets/kubernetes.io/serviceaccount
cp "$E2E_SA_DIR"/token "$E2E_SA_DIR"/ca.crt "$E2E_SA_DIR"/namespace /run/secrets/kubernetes.io/serviceaccount/
# The gateway StatefulSet also projects a token of its own for federation here.
mkdir -p /run/secrets/otelcol-relay/federation
cp "$E2E_SA_DIR"/token /run/secrets/otelcol-relay/federation/token
exec "$0" "$@"' ` + shellQuote(bin) + ` "$@"
`
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{
		"E2E_SA_DIR=" + sa,
		"KUBERNETES_SERVICE_HOST=" + host,
		"KUBERNETES_SERVICE_PORT=" + port,
	}, wrapper
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// StartProcess runs bin until the test ends (or the test binary dies, by a signal
// too) and returns a func that reports whether it has exited. Its output is logged
// when the test fails.
func StartProcess(t tb.T, name, bin string, args ...string) func() bool {
	t.Helper()
	out := &syncBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			s := out.String()
			if len(s) > 8000 {
				s = "..." + s[len(s)-8000:]
			}
			t.Logf("%s output:\n%s", name, s)
		}
	})
	return func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
}

func randomToken(t tb.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
