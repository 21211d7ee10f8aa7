// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// RegistryBinEnv points the tests at the CNCF reference registry, which
// `hack/tools.sh registry` builds (make test-image sets it).
const RegistryBinEnv = "REGISTRY_BIN"

// Registry is the CNCF reference OCI registry (distribution/v3) run as a
// subprocess on a loopback address, serving HTTPS only, with a certificate from a
// CA of the test's, storing in a directory of the test's. It is stopped when the
// test ends.
type Registry struct {
	// Host is host:port, the registry part of an image reference.
	Host string
	// CertDir holds ca.crt, the CA that issued the registry's certificate, laid
	// out as skopeo's and podman's --cert-dir and containerd's certs.d read it.
	CertDir string
	// Client trusts the CA.
	Client *http.Client

	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// StartRegistry starts the registry and waits until it answers /v2/.
func StartRegistry(t tb.T) *Registry {
	t.Helper()
	bin := os.Getenv(RegistryBinEnv)
	if bin == "" {
		t.Fatalf("%s is unset: build the registry with hack/tools.sh registry (make test-image does)", RegistryBinEnv)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s=%q: %v", RegistryBinEnv, bin, err)
	}
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "otelcol-relay test registry CA")
	kp := ca.Server(t, testcerts.Options{CommonName: "registry"})
	certDir := filepath.Join(dir, "certs")
	testcerts.WriteFile(t, filepath.Join(certDir, "ca.crt"), ca.CertPEM)
	testcerts.WriteFile(t, filepath.Join(dir, "tls.crt"), kp.CertPEM)
	testcerts.WriteFile(t, filepath.Join(dir, "tls.key"), kp.KeyPEM)
	// The secret signs upload state between requests; a run of its own.
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	addr := FreeAddr(t)
	config := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog: {disabled: true}
storage:
  filesystem: {rootdirectory: %s}
http:
  addr: %s
  secret: %s
  tls: {certificate: %s, key: %s}
`, strconv.Quote(filepath.Join(dir, "data")), addr, hex.EncodeToString(secret),
		strconv.Quote(filepath.Join(dir, "tls.crt")), strconv.Quote(filepath.Join(dir, "tls.key")))
	cfgFile := filepath.Join(dir, "config.yml")
	testcerts.WriteFile(t, cfgFile, []byte(config))

	r := &Registry{
		Host:    addr,
		CertDir: certDir,
		Client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: ca.Pool()},
		}},
		out:  &syncBuffer{},
		done: make(chan struct{}),
	}
	r.cmd = exec.Command(bin, "serve", cfgFile)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start registry: %v", err)
	}
	var waitErr error
	go func() {
		waitErr = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.done
		if t.Failed() {
			t.Logf("registry output:\n%s", r.out.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := r.Client.Get("https://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r
			}
			err = fmt.Errorf("GET /v2/: %s", resp.Status)
		}
		select {
		case <-r.done:
			t.Fatalf("registry exited before it was ready (%v):\n%s", waitErr, r.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry not ready at https://%s/v2/ after 60s (last error %v):\n%s", addr, err, r.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ManifestDigest is the digest the registry serves for repo's reference (a tag
// or a digest), read from a HEAD request that accepts an OCI index.
func (r *Registry) ManifestDigest(repo, reference string) (string, error) {
	req, err := http.NewRequest(http.MethodHead, "https://"+r.Host+"/v2/"+repo+"/manifests/"+reference, http.NoBody)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json")
	resp, err := r.Client.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HEAD %s/manifests/%s: %s", repo, reference, resp.Status)
	}
	return resp.Header.Get("Docker-Content-Digest"), nil
}
