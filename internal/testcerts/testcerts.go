// SPDX-License-Identifier: Apache-2.0

// Package testcerts makes real X.509 material for tests: certificate authorities,
// server and client certificates with their keys, PEM-encoded exactly as they
// would sit in a Kubernetes Secret. It also rotates files in a directory the way
// the kubelet updates a mounted Secret (see AtomicWriter), so watchers are tested
// against the real update pattern rather than a simplified one.
package testcerts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// CA is a certificate authority that can issue certificates.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
}

// KeyPair is an issued certificate with its private key.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte // the leaf certificate only
	KeyPEM  []byte // PKCS#8 "PRIVATE KEY"
}

// Options describes a certificate to issue. Zero validity fields mean "valid
// from an hour ago for a day", which keeps tests independent of clock skew.
type Options struct {
	CommonName string
	DNSNames   []string
	IPs        []net.IP
	NotBefore  time.Time
	NotAfter   time.Time
}

// NewCA creates a self-signed CA valid from an hour ago for a day.
func NewCA(t tb.T, commonName string) *CA {
	t.Helper()
	return NewCAWithValidity(t, commonName, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
}

// NewCAWithValidity creates a self-signed CA with an explicit validity window.
func NewCAWithValidity(t tb.T, commonName string, notBefore, notAfter time.Time) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(t),
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"otelcol-relay tests"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatalf("testcerts: create CA %q: %v", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testcerts: parse CA %q: %v", commonName, err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: encodeCert(der)}
}

// Pool returns a pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Server issues a certificate for TLS servers. Without names it is valid for
// localhost and 127.0.0.1, where every test server listens.
func (ca *CA) Server(t tb.T, o Options) *KeyPair {
	t.Helper()
	if len(o.DNSNames) == 0 && len(o.IPs) == 0 {
		o.DNSNames = []string{"localhost"}
		o.IPs = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	if o.CommonName == "" {
		o.CommonName = "server"
	}
	return ca.issue(t, o, x509.ExtKeyUsageServerAuth)
}

// Peer issues one certificate good for both ends of mutual TLS (server and client
// auth), for a test that hands one identity to a part that both serves and dials.
// Names default as in Server.
func (ca *CA) Peer(t tb.T, o Options) *KeyPair {
	t.Helper()
	if len(o.DNSNames) == 0 && len(o.IPs) == 0 {
		o.DNSNames = []string{"localhost"}
		o.IPs = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	return ca.issue(t, o, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

// Client issues a certificate for TLS clients (mutual TLS).
func (ca *CA) Client(t tb.T, o Options) *KeyPair {
	t.Helper()
	if o.CommonName == "" {
		o.CommonName = "client"
	}
	return ca.issue(t, o, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) issue(t tb.T, o Options, usages ...x509.ExtKeyUsage) *KeyPair {
	t.Helper()
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(24 * time.Hour)
	}
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(t),
		Subject:      pkix.Name{CommonName: o.CommonName, Organization: []string{"otelcol-relay tests"}},
		DNSNames:     o.DNSNames,
		IPAddresses:  o.IPs,
		NotBefore:    o.NotBefore,
		NotAfter:     o.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatalf("testcerts: issue %q: %v", o.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testcerts: parse %q: %v", o.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testcerts: marshal key of %q: %v", o.CommonName, err)
	}
	return &KeyPair{
		Cert:    cert,
		Key:     key,
		CertPEM: encodeCert(der),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
}

// TLSCertificate returns the pair as a tls.Certificate.
func (kp *KeyPair) TLSCertificate(t tb.T) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatalf("testcerts: key pair: %v", err)
	}
	return c
}

// SecretFiles are the files a kubernetes.io/tls Secret with a CA mounts: ca.crt
// (the given bundle), tls.crt and tls.key (this pair).
func (kp *KeyPair) SecretFiles(caBundle []byte) map[string][]byte {
	return map[string][]byte{"ca.crt": caBundle, "tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM}
}

// Serial is the certificate's serial number in decimal, as otlpfixture.Sink records it.
func (kp *KeyPair) Serial() string { return kp.Cert.SerialNumber.String() }

// Bundle concatenates the PEM certificates of several CAs into one CA bundle, the
// way a bundle holds the old and the new CA during a rotation.
func Bundle(cas ...*CA) []byte {
	var b []byte
	for _, ca := range cas {
		b = append(b, ca.CertPEM...)
	}
	return b
}

// ServerTLS returns a server config presenting kp; with clientCAs it requires and
// verifies client certificates issued by one of them.
func ServerTLS(t tb.T, kp *KeyPair, clientCAs ...*CA) *tls.Config {
	t.Helper()
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{kp.TLSCertificate(t)},
	}
	if len(clientCAs) > 0 {
		pool := x509.NewCertPool()
		for _, ca := range clientCAs {
			pool.AddCert(ca.Cert)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg
}

// WriteFile writes data to path with mode 0600, failing the test on error.
func WriteFile(t tb.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func newKey(t tb.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testcerts: generate key: %v", err)
	}
	return key
}

func newSerial(t tb.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatalf("testcerts: serial: %v", err)
	}
	return n.Add(n, big.NewInt(1))
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
