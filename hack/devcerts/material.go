// SPDX-License-Identifier: Apache-2.0

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otelcol-relay/otelcol-relay/internal/podrefs"
)

// material is the CA and everything issued or generated so far, kept in dir so
// that a second run produces the same objects.
type material struct {
	dir    string
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte
}

func openMaterial(dir string) (*material, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	m := &material{dir: dir}
	certPEM, keyPEM, err := m.keypair("ca", func(*ecdsa.PrivateKey) (*x509.Certificate, []byte, error) {
		tmpl := &x509.Certificate{
			Subject:               pkix.Name{CommonName: "otelcol-relay dev CA"},
			IsCA:                  true,
			BasicConstraintsValid: true,
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		}
		return tmpl, nil, nil
	})
	if err != nil {
		return nil, err
	}
	if m.caCert, m.caKey, err = decode(certPEM, keyPEM); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "ca.crt"), err)
	}
	m.caPEM = certPEM
	return m, nil
}

// keypair returns the PEM certificate and key stored under name, issuing them with
// the template from tmpl when they are not there yet.
func (m *material) keypair(name string, tmpl func(*ecdsa.PrivateKey) (*x509.Certificate, []byte, error)) ([]byte, []byte, error) {
	certPath, keyPath := filepath.Join(m.dir, name+".crt"), filepath.Join(m.dir, name+".key")
	c, errC := os.ReadFile(certPath)
	k, errK := os.ReadFile(keyPath)
	if errC == nil && errK == nil {
		return c, k, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	t, _, err := tmpl(key)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, nil, err
	}
	t.SerialNumber = serial
	t.NotBefore = time.Now().Add(-time.Hour)
	t.NotAfter = time.Now().Add(365 * 24 * time.Hour)
	parent, signer := t, any(key)
	if m.caCert != nil {
		parent, signer = m.caCert, m.caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, t, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	c = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	k = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(keyPath, k, 0o600); err != nil {
		return nil, nil, err
	}
	return c, k, os.WriteFile(certPath, c, 0o600)
}

func decode(certPEM, keyPEM []byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("not a PEM certificate and key")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	return cert, key, err
}

// leaf is the keypair of Secret ns/name: a serving certificate for the
// namespace's Services when the Secret is a receiver's, a client one otherwise.
func (m *material) leaf(o *overlay, ns, name string) ([]byte, []byte, error) {
	return m.keypair(ns+"."+name, func(*ecdsa.PrivateKey) (*x509.Certificate, []byte, error) {
		t := &x509.Certificate{
			Subject:     pkix.Name{CommonName: name},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if strings.Contains(name, "receiver") {
			t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			for _, svc := range o.services[ns] {
				t.DNSNames = append(t.DNSNames, svc, svc+"."+ns, svc+"."+ns+".svc", svc+"."+ns+".svc.cluster.local")
			}
			if len(t.DNSNames) == 0 {
				return nil, nil, fmt.Errorf("Secret %s/%s is a serving keypair, but namespace %s has no Service to name in it", ns, name, ns) //nolint:staticcheck // ST1005: Secret is the Kubernetes kind, a proper noun
			}
			t.Subject.CommonName = t.DNSNames[0]
		}
		return t, nil, nil
	})
}

// token is a random stand-in for a credential (a backend's header value), kept
// so that a second run does not change it.
func (m *material) token(ns, name, key string) (string, error) {
	p := filepath.Join(m.dir, ns+"."+name+"."+key+".token")
	if b, err := os.ReadFile(p); err == nil {
		return string(b), nil
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	t := "dev-" + hex.EncodeToString(b)
	return t, os.WriteFile(p, []byte(t), 0o600)
}

// build turns every reference into the object that satisfies it.
func build(o *overlay, m *material, endpoint string) ([]any, error) {
	var out []any
	for _, r := range o.refs {
		keys := r.Keys
		meta := metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "otelcol-relay-dev-certs"}}
		switch r.Kind {
		case podrefs.Secret:
			if len(keys) == 0 && r.Whole {
				keys = []string{"ca.crt", "tls.crt", "tls.key"}
			}
			s := corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta, StringData: map[string]string{}, Type: corev1.SecretTypeOpaque}
			tlsPair := 0
			for _, k := range keys {
				switch k {
				case "tls.crt", "tls.key":
					c, key, err := m.leaf(o, r.Namespace, r.Name)
					if err != nil {
						return nil, err
					}
					s.StringData["tls.crt"], s.StringData["tls.key"] = string(c), string(key)
					tlsPair++
				case "ca.crt":
					s.StringData[k] = string(m.caPEM)
				default:
					t, err := m.token(r.Namespace, r.Name, k)
					if err != nil {
						return nil, err
					}
					s.StringData[k] = t
				}
			}
			// What `kubectl create secret tls` makes, so that applying over one keeps its type.
			if tlsPair > 0 && onlyTLSKeys(s.StringData) {
				s.Type = corev1.SecretTypeTLS
			}
			out = append(out, s)
		case podrefs.ConfigMap:
			if len(keys) == 0 && r.Whole {
				keys = []string{"ca.crt"}
			}
			cm := corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta, Data: map[string]string{}}
			for _, k := range keys {
				switch {
				case strings.HasSuffix(k, ".crt"):
					cm.Data[k] = string(m.caPEM)
				case k == "endpoint":
					cm.Data[k] = endpoint
				default:
					return nil, fmt.Errorf("ConfigMap %s/%s key %s: devcerts does not know what it holds; create it by hand", r.Namespace, r.Name, k)
				}
			}
			out = append(out, cm)
		}
	}
	return out, nil
}

func onlyTLSKeys(data map[string]string) bool {
	for k := range data {
		if k != "tls.crt" && k != "tls.key" && k != "ca.crt" {
			return false
		}
	}
	_, c := data["tls.crt"]
	_, k := data["tls.key"]
	return c && k
}
