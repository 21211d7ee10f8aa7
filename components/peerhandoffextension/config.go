// SPDX-License-Identifier: Apache-2.0

package peerhandoffextension // import "github.com/otelcol-relay/otelcol-relay/components/peerhandoffextension"

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
)

// Config says where this relay takes its peers' hand-offs, how it reaches its
// peers, and when a drain starts handing off.
type Config struct {
	// Enabled turns the extension off when false: it serves nothing, and no
	// exporter hands off. The gateway's config lists it for every run and
	// the relay StatefulSet turns it on (RELAY_HANDOFF_ENABLED), where there
	// are peers and the mutual TLS it needs.
	Enabled bool `mapstructure:"enabled"`
	// Server takes peers' hand-offs: HTTPS with a client certificate required
	// (tls::client_ca_file), the relays' own. max_request_body_size bounds a
	// hand-off (one queue request of the exporter's batch size).
	Server confighttp.ServerConfig `mapstructure:"server"`
	// Client reaches the peers: endpoint is a URL with <pod> where a peer's
	// pod name goes (https://<pod>.otelcol-relay-peers.otelcol-relay.svc:4319),
	// tls the client certificate the peers accept.
	Client confighttp.ClientConfig `mapstructure:"client"`
	// Endpoints, instead of client::endpoint, lists the peers by pod name
	// with each one's URL, where pods have no DNS names (relays on one
	// machine, on fixed addresses).
	Endpoints map[string]string `mapstructure:"endpoints"`
	// PeerNames are the DNS names a client certificate must carry one of
	// (its SANs): the relays' own (otelcol-relay.<namespace>.svc). Other
	// clients of the same CA (fluent-bit, the agents) may not hand off: an
	// item goes straight into a backend's queue, past its route and
	// processors.
	PeerNames []string `mapstructure:"peer_names"`
	// Pod is this relay's pod name, <statefulset>-<ordinal> (the downward
	// API's metadata.name): the peers are the same StatefulSet's other pods.
	Pod string `mapstructure:"pod"`
	// MaxOrdinal is the highest ordinal tried as a peer (the HPA's
	// maxReplicas - 1 is enough).
	MaxOrdinal int `mapstructure:"max_ordinal"`
	// Admission is the admission extension whose drain starts the hand-off.
	Admission component.ID `mapstructure:"admission"`
	// StartAfter is how long a drain gives the backends before the queues go
	// to peers.
	StartAfter time.Duration `mapstructure:"start_after"`
}

// podName is a StatefulSet pod's name: a DNS label, a dash, the ordinal.
var podName = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)-(0|[1-9]\d*)$`)

// peerPlaceholder is where a peer's pod name goes in client::endpoint.
const peerPlaceholder = "<pod>"

// setPlaceholder is where the StatefulSet's name (pod's, without the
// ordinal) goes in client::endpoint, client::tls::server_name_override and
// peer_names: the manifests name the relays' Services after it
// (<statefulset>, <statefulset>-headless), so those follow a kustomize
// namePrefix or a Helm release with no value to rename.
const setPlaceholder = "<statefulset>"

// withStatefulSet is the config with the StatefulSet's name in place of
// <statefulset>; unchanged when pod is not a StatefulSet pod's name.
func (c *Config) withStatefulSet() *Config {
	set, _, err := c.self()
	if err != nil {
		return c
	}
	out := *c
	out.Client.Endpoint = strings.ReplaceAll(c.Client.Endpoint, setPlaceholder, set)
	out.Client.TLS.ServerName = strings.ReplaceAll(c.Client.TLS.ServerName, setPlaceholder, set)
	out.PeerNames = make([]string, len(c.PeerNames))
	for i, n := range c.PeerNames {
		out.PeerNames[i] = strings.ReplaceAll(n, setPlaceholder, set)
	}
	return &out
}

func (c *Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	c = c.withStatefulSet()
	var errs []error
	if _, _, err := c.self(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxOrdinal < 1 {
		errs = append(errs, fmt.Errorf("max_ordinal: %d, want at least 1 (a peer besides ordinal 0)", c.MaxOrdinal))
	}
	if len(c.Endpoints) == 0 {
		if err := c.validateEndpoint(); err != nil {
			errs = append(errs, err)
		}
	} else if err := c.validateEndpoints(); err != nil {
		errs = append(errs, err)
	} else if len(c.peers()) == 0 {
		errs = append(errs, fmt.Errorf("endpoints: lists no pod besides %q up to max_ordinal %d, want at least one peer", c.Pod, c.MaxOrdinal))
	}
	if c.Server.NetAddr.Endpoint == "" {
		errs = append(errs, errors.New("server::endpoint: empty, want host:port"))
	}
	if !c.Server.TLS.HasValue() || c.Server.TLS.Get().ClientCAFile == "" {
		errs = append(errs, errors.New("server::tls::client_ca_file: empty: a peer's hand-off carries the data of every backend, and is taken only from a client with a certificate of that CA"))
	}
	if len(c.PeerNames) == 0 {
		errs = append(errs, errors.New("peer_names: empty, want the DNS names of the relays' client certificate (otelcol-relay.<namespace>.svc): other clients of the CA may not hand off"))
	}
	for i, n := range c.PeerNames {
		if n == "" || strings.ContainsAny(n, " /:*") {
			errs = append(errs, fmt.Errorf("peer_names[%d]: %q, want a DNS name", i, n))
		}
	}
	if c.Admission.Type().String() == "" {
		errs = append(errs, errors.New("admission: empty, want the admission extension whose drain starts the hand-off"))
	}
	if c.StartAfter < 0 {
		errs = append(errs, fmt.Errorf("start_after: %s, want 0 or more", c.StartAfter))
	}
	return errors.Join(errs...)
}

func (c *Config) validateEndpoint() error {
	e := c.Client.Endpoint
	if strings.Count(e, peerPlaceholder) != 1 {
		return fmt.Errorf("client::endpoint: %q, want a URL with %s once, where a peer's pod name goes (or endpoints)", e, peerPlaceholder)
	}
	u, err := url.Parse(strings.Replace(e, peerPlaceholder, "relay-0", 1))
	if err != nil {
		return fmt.Errorf("client::endpoint: %q: %w", e, err)
	}
	if !strings.Contains(u.Hostname(), "relay-0") {
		return fmt.Errorf("client::endpoint: %q, want %s in the host name", e, peerPlaceholder)
	}
	return checkPeerURL("client::endpoint", e, u)
}

func (c *Config) validateEndpoints() error {
	if c.Client.Endpoint != "" {
		return fmt.Errorf("client::endpoint: %q and endpoints both set, want one", c.Client.Endpoint)
	}
	set, _, _ := c.self()
	var errs []error
	for pod, e := range c.Endpoints {
		m := podName.FindStringSubmatch(pod)
		if len(m) < 2 || m[1] != set {
			errs = append(errs, fmt.Errorf("endpoints: %q, want a pod name of StatefulSet %q, as pod is", pod, set))
			continue
		}
		u, err := url.Parse(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("endpoints::%s: %q: %w", pod, e, err))
			continue
		}
		if err := checkPeerURL("endpoints::"+pod, e, u); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkPeerURL refuses a peer URL that is not https://host:port.
func checkPeerURL(field, e string, u *url.URL) error {
	if u.Scheme != "https" {
		return fmt.Errorf("%s: %q, want https: a hand-off carries the data of every backend", field, e)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("%s: %q, want https://<host>:<port>, no path, query or user", field, e)
	}
	return nil
}

// self is the StatefulSet's name and this pod's ordinal.
func (c *Config) self() (string, int, error) {
	m := podName.FindStringSubmatch(c.Pod)
	if m == nil {
		return "", 0, fmt.Errorf("pod: %q, want a StatefulSet pod's name, <statefulset>-<ordinal>", c.Pod)
	}
	n, err := strconv.Atoi(m[3])
	if err != nil {
		return "", 0, fmt.Errorf("pod: %q: ordinal: %w", c.Pod, err)
	}
	return m[1], n, nil
}

// peers are the pod names hand-offs are tried on, in order: ordinal 0 up to
// max_ordinal, without this pod (and, with endpoints, only those listed).
// Ordinal 0 stays through any scale-in to one replica and is replaced last by
// a rolling update (docs/decisions/0025).
func (c *Config) peers() []string {
	set, self, _ := c.self()
	var out []string
	for n := 0; n <= c.MaxOrdinal; n++ {
		pod := set + "-" + strconv.Itoa(n)
		if _, listed := c.Endpoints[pod]; n != self && (len(c.Endpoints) == 0 || listed) {
			out = append(out, pod)
		}
	}
	return out
}

// peerURL is the hand-off URL of pod for signal.
func (c *Config) peerURL(pod, signal string) string {
	base, ok := c.Endpoints[pod]
	if !ok {
		base = strings.Replace(c.Client.Endpoint, peerPlaceholder, pod, 1)
	}
	return strings.TrimSuffix(base, "/") + handoffPath + signal
}

// handoffPath is where the server takes a signal's hand-offs: /v1/handoff/logs.
const handoffPath = "/v1/handoff/"
