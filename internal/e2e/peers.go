// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// PeerName is the DNS name the relays' certificate carries and peer_handoff's
// peer_names asks for (RELAY_TLS_NAME's default in config/gateway.yaml).
const PeerName = "otelcol-relay"

// NewPeerTLS is the receivers' identity as the cluster issues it: one CA signs
// the relays' keypair, which serves the receivers and the hand-off and is also
// the client certificate a relay presents to a peer (both usages, named
// PeerName), and fluent-bit's client certificate, which a peer refuses as a
// hand-off client because it does not carry that name.
func NewPeerTLS(t tb.T) *ReceiverTLS {
	t.Helper()
	ca := testcerts.NewCA(t, "relays CA")
	relay := ca.Peer(t, testcerts.Options{
		CommonName: PeerName,
		DNSNames:   []string{PeerName, "localhost"},
		IPs:        []net.IP{net.IPv4(127, 0, 0, 1)},
	})
	client := ca.Client(t, testcerts.Options{CommonName: "fluent-bit"})
	dir := t.TempDir()
	r := &ReceiverTLS{
		CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"), ClientCAFile: filepath.Join(dir, "ca.crt"),
		Client: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			RootCAs:      ca.Pool(),
			Certificates: []tls.Certificate{client.TLSCertificate(t)},
		},
	}
	testcerts.WriteFile(t, r.CertFile, relay.CertPEM)
	testcerts.WriteFile(t, r.KeyFile, relay.KeyPEM)
	testcerts.WriteFile(t, r.ClientCAFile, ca.CertPEM)
	return r
}

// Peers makes gws the pods otelcol-relay-0 .. -(n-1) of one StatefulSet with
// peer_handoff on: each gets its pod name and a hand-off port of its own, and
// a config overlay that lists every pod's hand-off URL (endpoints), since
// relays on loopback have no per-pod DNS names. The gateways must use a
// receiver identity from NewPeerTLS.
func Peers(t tb.T, gws []*Gateway) {
	t.Helper()
	var endpoints []string
	for i, g := range gws {
		g.HandoffAddr = FreeAddr(t)
		endpoints = append(endpoints, fmt.Sprintf("      %s-%d: https://%s", PeerName, i, g.HandoffAddr))
	}
	overlay := WriteConfig(t, "extensions:\n  peer_handoff:\n    client:\n      endpoint: \"\"\n    endpoints:\n"+strings.Join(endpoints, "\n")+"\n")
	for i, g := range gws {
		g.Args = append(g.Args, "--config", overlay)
		g.Env = append(g.Env,
			"RELAY_HANDOFF_ENABLED=true",
			fmt.Sprintf("MY_POD_NAME=%s-%d", PeerName, i),
			"RELAY_HANDOFF_PORT="+g.HandoffAddr[strings.LastIndex(g.HandoffAddr, ":")+1:],
		)
	}
}
