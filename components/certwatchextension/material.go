// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"
)

// certInfo describes one certificate in use, for the NotAfter gauge and logs.
type certInfo struct {
	file     string
	subject  string
	serial   string
	notAfter time.Time
}

// material is one validated, immutable set of TLS material. The extension swaps
// whole materials atomically, so a handshake always sees a consistent CA pool and
// key pair, never the CA of one version and the certificate of another.
type material struct {
	hash  [sha256.Size]byte
	roots *x509.CertPool // nil: the system roots
	cert  *tls.Certificate
	// client describes cert (nil without cert_file), cas the ca_file bundle.
	client *certInfo
	cas    []certInfo
	// loadedAt is when this material was validated and taken into use.
	loadedAt time.Time
	// creds performs gRPC client handshakes with this material.
	creds credentials.TransportCredentials
}

// notYetValidError rejects material that heals with time: a certificate whose
// NotBefore is still ahead, because of the issuer's clock skew or a writer that
// drops a certificate the moment it is issued (cert-manager's CSI driver,
// vault-agent). The same files are validated again at notBefore.
type notYetValidError struct {
	msg       string
	notBefore time.Time
}

func (e *notYetValidError) Error() string { return e.msg }

// earliestFutureNotBefore is when the first of cas that is not valid yet (and
// will be, before it expires) becomes valid.
func earliestFutureNotBefore(cas []*x509.Certificate, now time.Time) (time.Time, bool) {
	var at time.Time
	for _, c := range cas {
		if now.Before(c.NotBefore) && c.NotBefore.Before(c.NotAfter) && (at.IsZero() || c.NotBefore.Before(at)) {
			at = c.NotBefore
		}
	}
	return at, !at.IsZero()
}

// fileContents is what was read from the configured files in one pass.
type fileContents struct {
	ca, cert, key []byte
}

// settleReads bounds how often readSettled reads the files looking for two
// reads in a row that agree.
const settleReads = 4

// readSettled reads the files until two reads in a row agree, and reports
// whether they did. The files are read one after another, so a read that
// runs while a writer swaps them (kubelet's "..data" rename landing between
// reading cert_file and key_file) sees the new certificate beside the old
// key; validated, that mix would be counted and logged as a failed rotation
// although nothing is wrong. A second read that agrees with the first was
// not torn: one swap cannot fall inside both.
func readSettled(cfg *Config) (fileContents, [sha256.Size]byte, bool, error) {
	fc, hash, err := readFiles(cfg)
	for range settleReads - 1 {
		fc2, hash2, err2 := readFiles(cfg)
		if hash2 == hash && sameError(err, err2) {
			return fc2, hash2, true, err2
		}
		fc, hash, err = fc2, hash2, err2
	}
	return fc, hash, false, err
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
}

// readFiles reads every configured file and hashes the contents together, so
// any change to any of them is one change of the hash.
func readFiles(cfg *Config) (fileContents, [sha256.Size]byte, error) {
	var fc fileContents
	var err error
	read := func(field, path string) []byte {
		if path == "" || err != nil {
			return nil
		}
		b, rerr := os.ReadFile(path) //nolint:gosec // G304: the TLS file the operator's config names
		if rerr != nil {
			err = fmt.Errorf("%s: %w", field, rerr)
		}
		return b
	}
	fc.ca = read("ca_file", cfg.CAFile)
	fc.cert = read("cert_file", cfg.CertFile)
	fc.key = read("key_file", cfg.KeyFile)
	if err != nil {
		return fc, [sha256.Size]byte{}, err
	}
	h := sha256.New()
	for _, b := range [][]byte{fc.ca, fc.cert, fc.key} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return fc, sum, nil
}

// buildMaterial validates fc and turns it into a material. Its errors name the
// config field, the file and the reason; they never contain file contents, so a
// private key cannot end up in a log line.
func buildMaterial(cfg *Config, fc fileContents, hash [sha256.Size]byte, minVersion uint16, now time.Time) (*material, error) {
	m := &material{hash: hash, loadedAt: now}

	if cfg.CAFile != "" {
		cas, err := parseCertificates("ca_file", cfg.CAFile, fc.ca)
		if err != nil {
			return nil, err
		}
		valid := 0
		for _, c := range cas {
			if !now.Before(c.NotBefore) && !now.After(c.NotAfter) {
				valid++
			}
		}
		if valid == 0 {
			msg := fmt.Sprintf("ca_file %q: none of its %d certificates is within its validity window (first: %s)", cfg.CAFile, len(cas), window(cas[0]))
			if at, ok := earliestFutureNotBefore(cas, now); ok {
				return nil, &notYetValidError{msg: msg, notBefore: at}
			}
			return nil, errors.New(msg)
		}
		if cfg.IncludeSystemCACertsPool {
			sys, err := x509.SystemCertPool()
			if err != nil {
				return nil, fmt.Errorf("include_system_ca_certs_pool: cannot load the system roots: %w", err)
			}
			m.roots = sys
		} else {
			m.roots = x509.NewCertPool()
		}
		for _, c := range cas {
			m.roots.AddCert(c)
			m.cas = append(m.cas, describe(cfg.CAFile, c))
		}
	}

	if cfg.CertFile != "" {
		chain, err := parseCertificates("cert_file", cfg.CertFile, fc.cert)
		if err != nil {
			return nil, err
		}
		leaf := chain[0]
		if now.Before(leaf.NotBefore) {
			return nil, &notYetValidError{
				msg:       fmt.Sprintf("cert_file %q: certificate %q is not valid yet (%s)", cfg.CertFile, leaf.Subject.CommonName, window(leaf)),
				notBefore: leaf.NotBefore,
			}
		}
		if now.After(leaf.NotAfter) {
			return nil, fmt.Errorf("cert_file %q: certificate %q has expired (%s)", cfg.CertFile, leaf.Subject.CommonName, window(leaf))
		}
		if len(bytes.TrimSpace(fc.key)) == 0 {
			return nil, fmt.Errorf("key_file %q is empty", cfg.KeyFile)
		}
		if !hasPrivateKeyBlock(fc.key) {
			return nil, fmt.Errorf("key_file %q: no PEM private key found", cfg.KeyFile)
		}
		pair, err := tls.X509KeyPair(fc.cert, fc.key)
		if err != nil {
			// crypto/tls never puts key bytes into these errors; they only say
			// what is wrong ("private key does not match public key", ...).
			if strings.Contains(err.Error(), "does not match") {
				return nil, fmt.Errorf("key_file %q does not match the certificate in cert_file %q", cfg.KeyFile, cfg.CertFile)
			}
			return nil, fmt.Errorf("key_file %q: %w", cfg.KeyFile, err)
		}
		pair.Leaf = leaf
		m.cert = &pair
		client := describe(cfg.CertFile, leaf)
		m.client = &client
	}

	m.creds = credentials.NewTLS(&tls.Config{
		RootCAs:              m.roots,
		MinVersion:           minVersion,
		ServerName:           cfg.ServerNameOverride,
		GetClientCertificate: m.clientCertificate,
	})
	return m, nil
}

// clientCertificate always presents the configured certificate, like configtls
// does, so that a server that rejects it says why instead of seeing no certificate.
func (m *material) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if m.cert == nil {
		return &tls.Certificate{}, nil
	}
	return m.cert, nil
}

// tlsConfig is a client config that verifies the server against this material's
// roots and presents its certificate.
func (m *material) tlsConfig(minVersion uint16, serverName string, nextProtos []string) *tls.Config {
	return &tls.Config{
		RootCAs:              m.roots,
		MinVersion:           minVersion,
		ServerName:           serverName,
		NextProtos:           nextProtos,
		GetClientCertificate: m.clientCertificate,
	}
}

// verifyPeer does what crypto/tls does when InsecureSkipVerify is false, but with
// this material's roots; it serves handshakes whose tls.Config was built before
// the material (the HTTP proxy path).
func (m *material) verifyPeer(cs tls.ConnectionState, serverName string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("certwatch: the server presented no certificate")
	}
	if serverName == "" {
		return errors.New("certwatch: no server name to verify the server's certificate against: set server_name_override")
	}
	opts := x509.VerifyOptions{
		Roots:         m.roots,
		DNSName:       serverName,
		Intermediates: x509.NewCertPool(),
	}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(opts)
	return err
}

func parseCertificates(field, path string, data []byte) ([]*x509.Certificate, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s %q is empty", field, path)
	}
	var certs []*x509.Certificate
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s %q: certificate #%d does not parse: %w", field, path, len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s %q: no PEM certificate found", field, path)
	}
	return certs, nil
}

func hasPrivateKeyBlock(data []byte) bool {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return false
		}
		if strings.HasSuffix(block.Type, "PRIVATE KEY") {
			return true
		}
	}
}

func describe(file string, c *x509.Certificate) certInfo {
	return certInfo{file: file, subject: c.Subject.CommonName, serial: c.SerialNumber.String(), notAfter: c.NotAfter}
}

func window(c *x509.Certificate) string {
	return fmt.Sprintf("valid from %s to %s", c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339))
}
