// SPDX-License-Identifier: Apache-2.0

package testcerts

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIssuedCertificatesVerify(t *testing.T) {
	ca := NewCA(t, "ca")
	srv := ca.Server(t, Options{})
	cli := ca.Client(t, Options{CommonName: "alice"})
	for _, c := range []struct {
		kp    *KeyPair
		usage x509.ExtKeyUsage
		name  string
	}{{srv, x509.ExtKeyUsageServerAuth, "127.0.0.1"}, {srv, x509.ExtKeyUsageServerAuth, "localhost"}, {cli, x509.ExtKeyUsageClientAuth, ""}} {
		if _, err := c.kp.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: c.name, KeyUsages: []x509.ExtKeyUsage{c.usage}}); err != nil {
			t.Errorf("%s: %v", c.kp.Cert.Subject.CommonName, err)
		}
	}
	if _, err := tls.X509KeyPair(cli.CertPEM, cli.KeyPEM); err != nil {
		t.Fatal(err)
	}
	other := NewCA(t, "other")
	if _, err := srv.Cert.Verify(x509.VerifyOptions{Roots: other.Pool(), DNSName: "localhost"}); err == nil {
		t.Fatal("a certificate verified against a CA that did not issue it")
	}
}

func TestAtomicWriteLayout(t *testing.T) {
	dir := t.TempDir()
	var previous string
	for i, content := range []string{"one", "two", "three"} {
		AtomicWrite(t, dir, map[string][]byte{"tls.crt": []byte(content), "tls.key": []byte("k" + content)})

		target, err := os.Readlink(filepath.Join(dir, DataDirName))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(target, "..") || target == DataDirName {
			t.Fatalf("..data points at %q, want a timestamped dir", target)
		}
		if link, _ := os.Readlink(filepath.Join(dir, "tls.crt")); link != filepath.Join(DataDirName, "tls.crt") {
			t.Fatalf("tls.crt links to %q", link)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "tls.crt")); string(b) != content {
			t.Fatalf("rotation %d: read %q, want %q", i, b, content)
		}
		if previous != "" {
			if _, err := os.Stat(filepath.Join(dir, previous)); !os.IsNotExist(err) {
				t.Fatalf("old dir %s still exists (%v)", previous, err)
			}
		}
		if _, err := os.Lstat(filepath.Join(dir, newDataDirName)); !os.IsNotExist(err) {
			t.Fatalf("..data_tmp left behind")
		}
		previous = target
	}

	AtomicWrite(t, dir, map[string][]byte{"tls.crt": []byte("only")})
	if _, err := os.Lstat(filepath.Join(dir, "tls.key")); !os.IsNotExist(err) {
		t.Fatal("tls.key survived a payload without it")
	}
}
