// SPDX-License-Identifier: Apache-2.0

package backendsconverter

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/otelcol-relay/otelcol-relay/components/internal/safeconfig"
)

// dnsLabel is the Tigera operator's rule for exporter names: the name becomes part
// of a component id, an environment variable and a file name, so it stays simple.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// protocols maps a backend's protocol to the exporter type that speaks it.
var protocols = map[string]string{"grpc": "otlp_grpc", "http": "otlp_http_wire"}

// fileKeys are the tls:: fields that name files; any of them makes the backend's
// TLS identity a certwatch instance, so the files rotate without a restart.
var fileKeys = []string{"ca_file", "cert_file", "key_file"}

// tlsKeys are the fields a backend's tls block may hold: certwatch's own.
var tlsKeys = map[string]bool{
	"ca_file": true, "cert_file": true, "key_file": true, "include_system_ca_certs_pool": true,
	"server_name_override": true, "min_version": true, "poll_interval": true,
}

// staticTLSKeys are the tls:: fields that mean the same in an exporter's own tls
// block, used when there is no file to watch (a header-only backend).
var staticTLSKeys = map[string]bool{"include_system_ca_certs_pool": true, "server_name_override": true, "min_version": true}

// perBackendKeys are exporter settings that only the backend entry itself sets:
// written in backend_defaults or an exporter override they would either apply one
// backend's identity to all of them or bypass the header rules.
var perBackendKeys = []string{"endpoint", "headers", "tls", "middlewares", "auth"}

// backend is one entry of the top-level backends list.
type backend struct {
	index     int
	name      string
	endpoint  string
	protocol  string
	headers   []string
	tls       map[string]any
	pipelines []string
	exporter  map[string]any
	// signals limits the pipelines to those of these types (logs, metrics, traces).
	signals []string
	// route and processors give the backend a pipeline of its own (route.go).
	route      *route
	processors []string
	auth       *auth
}

var backendKeys = map[string]bool{
	"name": true, "endpoint": true, "protocol": true, "headers": true, "tls": true, "pipelines": true, "exporter": true,
	"signals": true, "route": true, "processors": true, "auth": true,
}

// where names the entry in errors: by index, and by name once it has one.
func (b *backend) where() string {
	if b.name == "" {
		return fmt.Sprintf("backends[%d]", b.index)
	}
	return fmt.Sprintf("backends[%d] (%s)", b.index, b.name)
}

func (b *backend) exporterID() string  { return protocols[b.protocol] + "/" + b.name }
func (b *backend) certwatchID() string { return "certwatch/" + b.name }

// headerEnv is the variable a header's value is read from, by the convention the
// Tigera operator and safeconfigprovider share: OTEL_EXPORTER_<NAME>_<HEADER>.
func (b *backend) headerEnv(header string) string {
	return safeconfig.ExporterEnvName(b.name, header)
}

// watchesFiles reports whether the backend's TLS identity lives in files.
func (b *backend) watchesFiles() bool {
	for _, k := range fileKeys {
		if s, _ := b.tls[k].(string); s != "" {
			return true
		}
	}
	return false
}

// parseBackend reads one list entry and checks it on its own; checks against the
// rest of the config happen when it is expanded.
func parseBackend(i int, raw any) (*backend, error) {
	b := &backend{index: i, protocol: "grpc"}
	// The entry's maps become the exporter's and certwatch's, which the
	// collector reads unflattened: {"exporter::headers::X": v} is a header.
	m, ok := safeconfig.Unflatten(raw).(map[string]any)
	if !ok {
		return b, fmt.Errorf("%s: want a map with name, endpoint, protocol, headers, tls, got %T", b.where(), raw)
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !backendKeys[k] {
			errs = append(errs, fmt.Errorf("%s: unknown field %q (fields: %s)", b.where(), k, strings.Join(slices.Sorted(maps.Keys(backendKeys)), ", ")))
		}
	}
	b.name, _ = m["name"].(string)
	switch {
	case b.name == "":
		errs = append(errs, fmt.Errorf("%s: name is required", b.where()))
	case !dnsLabel.MatchString(b.name) || len(b.name) > 63:
		errs = append(errs, fmt.Errorf("%s: name %q must be a DNS label (lower case letters, digits and '-', at most 63)", b.where(), b.name))
	}
	b.endpoint, _ = m["endpoint"].(string)
	if b.endpoint == "" {
		errs = append(errs, fmt.Errorf("%s: endpoint is required", b.where()))
	}
	if p, ok := m["protocol"]; ok {
		b.protocol, _ = p.(string)
		if _, known := protocols[b.protocol]; !known {
			errs = append(errs, fmt.Errorf("%s: protocol %v must be grpc or http", b.where(), p))
		}
	}
	hs, err := stringList(m["headers"])
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: headers: %w (a list of header names; each value comes from the environment)", b.where(), err))
	}
	seen := map[string]string{}
	for _, h := range hs {
		if h == "" {
			errs = append(errs, fmt.Errorf("%s: headers: an empty header name", b.where()))
			continue
		}
		env := b.headerEnv(h)
		if other, dup := seen[env]; dup {
			errs = append(errs, fmt.Errorf("%s: headers %q and %q both read %s", b.where(), other, h, env))
		}
		seen[env] = h
	}
	b.headers = hs
	if t, ok := m["tls"]; ok && t != nil {
		b.tls, ok = t.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: tls: want a map, got %T", b.where(), t))
		}
		for _, k := range slices.Sorted(maps.Keys(b.tls)) {
			if !tlsKeys[k] {
				errs = append(errs, fmt.Errorf("%s: tls::%s is not a field (fields: %s)", b.where(), k, strings.Join(slices.Sorted(maps.Keys(tlsKeys)), ", ")))
			}
		}
		if !b.watchesFiles() {
			for _, k := range slices.Sorted(maps.Keys(b.tls)) {
				if tlsKeys[k] && !staticTLSKeys[k] {
					errs = append(errs, fmt.Errorf("%s: tls::%s only applies with ca_file or cert_file/key_file", b.where(), k))
				}
			}
		}
	}
	if b.pipelines, err = stringList(m["pipelines"]); err != nil {
		errs = append(errs, fmt.Errorf("%s: pipelines: %w", b.where(), err))
	}
	if b.signals, err = stringList(m["signals"]); err != nil {
		errs = append(errs, fmt.Errorf("%s: signals: %w", b.where(), err))
	}
	for _, sig := range b.signals {
		if !signalTypes[sig] {
			errs = append(errs, fmt.Errorf("%s: signals: %q is not a signal (logs, metrics, traces)", b.where(), sig))
		}
	}
	if b.processors, err = stringList(m["processors"]); err != nil {
		errs = append(errs, fmt.Errorf("%s: processors: %w (ids from the top-level processors map)", b.where(), err))
	}
	if r, ok := m["route"]; ok {
		var rerrs []error
		b.route, rerrs = parseRoute(b.where(), r)
		errs = append(errs, rerrs...)
	}
	if a, ok := m["auth"]; ok {
		var aerrs []error
		b.auth, aerrs = parseAuth(b.where(), a)
		errs = append(errs, aerrs...)
		if b.auth != nil {
			for _, h := range hs {
				if strings.EqualFold(h, b.auth.header()) {
					errs = append(errs, fmt.Errorf("%s: headers: %s is also set by auth; keep one of the two", b.where(), h))
				}
			}
		}
	}
	if e, ok := m["exporter"]; ok && e != nil {
		if b.exporter, ok = e.(map[string]any); !ok {
			errs = append(errs, fmt.Errorf("%s: exporter: want a map of exporter settings, got %T", b.where(), e))
		}
		errs = append(errs, checkNoPerBackendKeys(b.where()+": exporter", b.exporter)...)
	}
	return b, errors.Join(errs...)
}

// checkNoPerBackendKeys refuses the per-backend keys in m, in any case: a key
// the exporter does not know fails later anyway, but this names the reason.
// m must be unflattened (safeconfig.Unflatten).
func checkNoPerBackendKeys(where string, m map[string]any) []error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if slices.ContainsFunc(perBackendKeys, func(p string) bool { return strings.EqualFold(k, p) }) {
			errs = append(errs, fmt.Errorf("%s: %s cannot be set here; it belongs to the backend entry (endpoint, headers, tls)", where, k))
		}
	}
	return errs
}

func stringList(v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of strings, got %T", v)
	}
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("want a list of strings, got an element of type %T", e)
		}
		out = append(out, s)
	}
	return out, nil
}
