// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// TestDeployPeerHandoffNamesTheRelays: a relay pod's peer_handoff as the collector
// reads it (print-config of the container as the kubelet starts it): on, its peers
// found through the headless Service of the pod's StatefulSet, and the name it
// verifies on a peer and requires of a peer's client certificate the one the
// install's serving certificate carries: <service>.<namespace>.svc for a keypair
// of the user's (deploy/README.md), the Service's name alone for cert-manager's.
// <statefulset> is the pod's StatefulSet, resolved by the extension.
func TestDeployPeerHandoffNamesTheRelays(t *testing.T) {
	for _, c := range []struct {
		name, dir, tlsName string
	}{
		{"base", manifest.Dir("base"), "<statefulset>.otelcol-relay.svc"},
		{"cert-manager", manifest.OverlayOf(t, []string{manifest.Dir("base")}, manifest.Dir("components", "cert-manager")), "<statefulset>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := manifest.Render(t, c.dir)
			out := runPod(t, r, r.StatefulSetOf(t, "gateway").Spec.Template.Spec, inPod(t), "print-config")
			var cfg struct {
				Extensions struct {
					PeerHandoff struct {
						Enabled   bool     `json:"enabled"`
						Pod       string   `json:"pod"`
						PeerNames []string `json:"peer_names"`
						Server    struct {
							Endpoint string `json:"endpoint"`
						} `json:"server"`
						Client struct {
							Endpoint string `json:"endpoint"`
							TLS      struct {
								ServerName string `json:"server_name_override"`
							} `json:"tls"`
						} `json:"client"`
					} `json:"peer_handoff"`
				} `json:"extensions"`
				Service struct {
					Extensions []string `json:"extensions"`
				} `json:"service"`
			}
			if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
				t.Fatalf("print-config: %v\n%s", err, out)
			}
			p := cfg.Extensions.PeerHandoff
			for _, check := range []struct{ what, got, want string }{
				{"pod", p.Pod, "otelcol-relay-0"},
				{"server::endpoint", p.Server.Endpoint, "127.0.0.1:4319"},
				{"client::endpoint", p.Client.Endpoint, "https://<pod>.<statefulset>-headless.otelcol-relay.svc:4319"},
				{"client::tls::server_name_override", p.Client.TLS.ServerName, c.tlsName},
			} {
				if check.got != check.want {
					t.Errorf("peer_handoff %s: %q, want %q", check.what, check.got, check.want)
				}
			}
			if !p.Enabled || len(p.PeerNames) != 1 || p.PeerNames[0] != c.tlsName {
				t.Errorf("peer_handoff enabled %v, peer_names %q: want on, [%q]", p.Enabled, p.PeerNames, c.tlsName)
			}
			found := false
			for _, e := range cfg.Service.Extensions {
				found = found || e == "peer_handoff"
			}
			if !found {
				t.Errorf("peer_handoff not in service::extensions %v", cfg.Service.Extensions)
			}
		})
	}
}
