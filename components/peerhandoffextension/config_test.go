// SPDX-License-Identifier: Apache-2.0

package peerhandoffextension

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/extension/extensiontest"
)

func validConfig() *Config {
	cfg := createDefaultConfig()
	cfg.Pod, cfg.MaxOrdinal, cfg.Admission = "otelcol-relay-2", 4, admissionID
	cfg.PeerNames = []string{"otelcol-relay.otelcol-relay.svc"}
	cfg.Server.NetAddr.Endpoint = ":4319"
	cfg.Server.TLS = configoptional.Some(configtls.ServerConfig{
		Config:       configtls.Config{CertFile: "/tls/tls.crt", KeyFile: "/tls/tls.key"},
		ClientCAFile: "/tls/ca.crt",
	})
	cfg.Client.Endpoint = "https://<pod>.otelcol-relay-peers.otelcol-relay.svc:4319"
	return cfg
}

func TestValidateNamesTheFieldAndValue(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"pod without ordinal", func(c *Config) { c.Pod = "otelcol-relay" }, `pod: "otelcol-relay", want a StatefulSet pod's name`},
		{"pod empty", func(c *Config) { c.Pod = "" }, `pod: "", want`},
		{"ordinal with a leading zero", func(c *Config) { c.Pod = "relay-01" }, `pod: "relay-01"`},
		{"max_ordinal", func(c *Config) { c.MaxOrdinal = 0 }, "max_ordinal: 0, want at least 1"},
		{"no placeholder", func(c *Config) { c.Client.Endpoint = "https://relay:4319" }, `client::endpoint: "https://relay:4319", want a URL with <pod> once`},
		{"plain http", func(c *Config) { c.Client.Endpoint = "http://<pod>.peers:4319" }, "want https"},
		{"a path", func(c *Config) { c.Client.Endpoint = "https://<pod>.peers:4319/v1" }, "no path, query or user"},
		{"placeholder outside the host", func(c *Config) { c.Client.Endpoint = "https://peers:4319?p=<pod>" }, "want <pod> in the host name"},
		{"endpoints and endpoint", func(c *Config) { c.Endpoints = map[string]string{"otelcol-relay-0": "https://127.0.0.1:4319"} }, "client::endpoint: \"https://<pod>.otelcol-relay-peers.otelcol-relay.svc:4319\" and endpoints both set"},
		{"endpoints of another StatefulSet", func(c *Config) {
			c.Client.Endpoint, c.Endpoints = "", map[string]string{"other-0": "https://127.0.0.1:4319"}
		}, `endpoints: "other-0", want a pod name of StatefulSet "otelcol-relay"`},
		{"endpoints of this pod alone", func(c *Config) {
			c.Client.Endpoint, c.Endpoints = "", map[string]string{"otelcol-relay-2": "https://127.0.0.1:4319"}
		}, `endpoints: lists no pod besides "otelcol-relay-2" up to max_ordinal 4, want at least one peer`},
		{"endpoints in plain http", func(c *Config) {
			c.Client.Endpoint, c.Endpoints = "", map[string]string{"otelcol-relay-0": "http://127.0.0.1:4319"}
		}, `endpoints::otelcol-relay-0: "http://127.0.0.1:4319", want https`},
		{"no server endpoint", func(c *Config) { c.Server.NetAddr.Endpoint = "" }, "server::endpoint: empty"},
		{"no client CA", func(c *Config) { c.Server.TLS = configoptional.Some(configtls.ServerConfig{}) }, "server::tls::client_ca_file: empty"},
		{"no TLS", func(c *Config) { c.Server.TLS = configoptional.None[configtls.ServerConfig]() }, "server::tls::client_ca_file: empty"},
		{"no admission", func(c *Config) { c.Admission = component.ID{} }, "admission: empty"},
		{"no peer_names", func(c *Config) { c.PeerNames = nil }, "peer_names: empty"},
		{"a wildcard peer name", func(c *Config) { c.PeerNames = []string{"*.svc"} }, `peer_names[0]: "*.svc", want a DNS name`},
		{"negative start_after", func(c *Config) { c.StartAfter = -1 }, "start_after: -1ns, want 0 or more"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := validConfig()
			c.edit(cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate: %v, want %q", err, c.want)
			}
		})
	}
}

// <statefulset> is the pod's StatefulSet wherever a relay's Service name goes,
// so a prefixed install's config needs no other value.
func TestStatefulSetPlaceholder(t *testing.T) {
	cfg := validConfig()
	cfg.Pod = "team-a-otelcol-relay-1"
	cfg.Client.Endpoint = "https://<pod>.<statefulset>-headless.telemetry.svc:4319"
	cfg.Client.TLS.ServerName = "<statefulset>"
	cfg.PeerNames = []string{"<statefulset>.telemetry.svc", "<statefulset>"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	got := cfg.withStatefulSet()
	if want := "https://team-a-otelcol-relay-0.team-a-otelcol-relay-headless.telemetry.svc:4319/v1/handoff/logs"; got.peerURL("team-a-otelcol-relay-0", "logs") != want {
		t.Errorf("peerURL: %s, want %s", got.peerURL("team-a-otelcol-relay-0", "logs"), want)
	}
	if got.Client.TLS.ServerName != "team-a-otelcol-relay" || !slices.Equal(got.PeerNames, []string{"team-a-otelcol-relay.telemetry.svc", "team-a-otelcol-relay"}) {
		t.Errorf("server name %q, peer names %v", got.Client.TLS.ServerName, got.PeerNames)
	}
	if cfg.Client.Endpoint != "https://<pod>.<statefulset>-headless.telemetry.svc:4319" {
		t.Error("withStatefulSet changed the config it was called on")
	}
}

// Off, nothing else is checked: the gateway's config lists the extension
// for runs without peers or TLS.
func TestDisabledNeedsNothingElse(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Enabled = false
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate with enabled: false: %v", err)
	}
	h, err := newHandoff(extensiontest.NewNopSettings(component.MustNewType("peer_handoff")), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background(), host{}); err != nil {
		t.Fatalf("Start with enabled: false and no admission: %v", err)
	}
	if h.Active() {
		t.Error("Active with enabled: false")
	}
	if err := h.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestPeersFromOrdinalZeroWithoutSelf(t *testing.T) {
	cfg := validConfig()
	want := []string{"otelcol-relay-0", "otelcol-relay-1", "otelcol-relay-3", "otelcol-relay-4"}
	if got := cfg.peers(); !slices.Equal(got, want) {
		t.Errorf("peers of otelcol-relay-2 up to 4: %v, want %v", got, want)
	}
	if got, want := cfg.peerURL("otelcol-relay-0", "logs"), "https://otelcol-relay-0.otelcol-relay-peers.otelcol-relay.svc:4319/v1/handoff/logs"; got != want {
		t.Errorf("peerURL: %s, want %s", got, want)
	}
	// With endpoints, the peers are those listed, in the same order.
	cfg.Client.Endpoint = ""
	cfg.Endpoints = map[string]string{"otelcol-relay-3": "https://127.0.0.4:4319/", "otelcol-relay-0": "https://127.0.0.1:4319", "otelcol-relay-2": "https://127.0.0.3:4319"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.peers(), []string{"otelcol-relay-0", "otelcol-relay-3"}; !slices.Equal(got, want) {
		t.Errorf("peers with endpoints: %v, want %v", got, want)
	}
	if got, want := cfg.peerURL("otelcol-relay-3", "metrics"), "https://127.0.0.4:4319/v1/handoff/metrics"; got != want {
		t.Errorf("peerURL with endpoints: %s, want %s", got, want)
	}
}
