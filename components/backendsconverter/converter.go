// SPDX-License-Identifier: Apache-2.0

// Package backendsconverter is the confmap converter of otelcol-relay that makes
// adding a backend one declarative step. It expands a top-level `backends:` list,
// in the shape of the Tigera operator's LogCollector exporters (name, endpoint,
// protocol, headers from Secrets, optional CA and client certificate), into what
// the collector runs: an otlp_grpc/<name> or otlp_http_wire/<name> exporter, a
// certwatch/<name> instance when the backend has certificate files, and the
// exporter in every pipeline.
//
// It runs before safeconfigconverter, so every safety rule (TLS unless the name
// opts out, certwatch wiring, header variables not shared, queue bounds that fit
// the volume) applies to the expanded result exactly as to a hand-written backend.
// `otelcol-relay print-config` shows the expansion.
package backendsconverter // import "github.com/otelcol-relay/otelcol-relay/components/backendsconverter"

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-relay/otelcol-relay/components/internal/safeconfig"
)

const (
	// BackendsKey is the top-level list of backends.
	BackendsKey = safeconfig.BackendsKey
	// DefaultsKey holds exporter settings every expanded exporter starts from
	// (sending_queue, retry_on_failure, compression, timeout...).
	DefaultsKey = "backend_defaults"
)

type converter struct {
	lookup func(string) (string, bool)
}

// NewFactory returns the factory of the backends converter.
func NewFactory() confmap.ConverterFactory {
	return confmap.NewConverterFactory(func(confmap.ConverterSettings) confmap.Converter {
		return converter{lookup: os.LookupEnv}
	})
}

func (c converter) Convert(_ context.Context, conf *confmap.Conf) error {
	if !conf.IsSet(BackendsKey) && !conf.IsSet(DefaultsKey) {
		return nil
	}
	cfg := conf.ToStringMap()
	if err := Expand(cfg, c.lookup); err != nil {
		return fmt.Errorf("backends: %w", err)
	}
	// Replace the top-level keys the expansion touched. Deleting first keeps
	// Merge from appending lists (confmap.enableMergeAppendOption) or keeping
	// the removed keys.
	changed := map[string]any{}
	for _, k := range []string{BackendsKey, DefaultsKey, "exporters", "extensions", "processors", "connectors", "service", safeconfig.HeaderEnvKey} {
		conf.Delete(k)
		if v, ok := cfg[k]; ok {
			changed[k] = v
		}
	}
	return conf.Merge(confmap.NewFromStringMap(changed))
}

// Expand rewrites cfg in place: it removes the backends list and the defaults and
// adds each backend's exporter, certwatch instance and pipeline entries. lookup
// reads the environment (header values come from Secrets through it).
func Expand(cfg map[string]any, lookup func(string) (string, bool)) error {
	rawList, hasList := cfg[BackendsKey]
	defaults, _ := safeconfig.Unflatten(cfg[DefaultsKey]).(map[string]any)
	if d, ok := cfg[DefaultsKey]; ok && d != nil && defaults == nil {
		return fmt.Errorf("%s: want a map of exporter settings, got %T", DefaultsKey, d)
	}
	delete(cfg, BackendsKey)
	delete(cfg, DefaultsKey)
	if errs := checkNoPerBackendKeys(DefaultsKey, defaults); len(errs) > 0 {
		return errors.Join(errs...)
	}
	if !hasList || rawList == nil {
		return nil
	}
	list, ok := rawList.([]any)
	if !ok {
		return fmt.Errorf("%s: want a list of backends, got %T", BackendsKey, rawList)
	}

	var errs []error
	var backends []*backend
	names := map[string]int{}
	for i, raw := range list {
		b, err := parseBackend(i, raw)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if j, dup := names[b.name]; dup {
			errs = append(errs, fmt.Errorf("%s: name %q is already used by backends[%d]", b.where(), b.name, j))
			continue
		}
		names[b.name] = i
		backends = append(backends, b)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}

	c := &config{
		exporters:  ensureMap(cfg, "exporters"),
		extensions: ensureMap(cfg, "extensions"),
		service:    ensureMap(cfg, "service"),
		headerEnvs: ensureMap(cfg, safeconfig.HeaderEnvKey),
		defaults:   defaults,
		lookup:     lookup,
	}
	c.processors, _ = cfg["processors"].(map[string]any)
	c.pipelines, _ = c.service["pipelines"].(map[string]any)
	if len(c.pipelines) == 0 {
		return errors.New("service::pipelines is empty: the backends need pipelines to be added to")
	}
	// The pipelines written by hand: a backend's own pipelines never feed another.
	c.shared = slices.Sorted(maps.Keys(c.pipelines))
	for _, b := range backends {
		errs = append(errs, c.add(b)...)
	}
	if len(c.headerEnvs) == 0 {
		delete(cfg, safeconfig.HeaderEnvKey)
	}
	if len(c.connectors) > 0 {
		conns := ensureMap(cfg, "connectors")
		for id, v := range c.connectors {
			if _, taken := conns[id]; taken {
				errs = append(errs, fmt.Errorf("connectors::%s is already configured, and the backends with a route or processors of their own need that id", id))
			}
			conns[id] = v
		}
	}
	if len(c.newProcessors) > 0 {
		procs := ensureMap(cfg, "processors")
		maps.Copy(procs, c.newProcessors)
	}
	return errors.Join(errs...)
}

// config holds the parts of the collector config the expansion writes to.
type config struct {
	exporters, extensions, service, pipelines, processors, headerEnvs map[string]any
	defaults                                                          map[string]any
	connectors, newProcessors                                         map[string]any
	shared                                                            []string
	lookup                                                            func(string) (string, bool)
}

// add expands one backend into the config's maps.
func (c *config) add(b *backend) []error {
	var errs []error
	id := b.exporterID()
	if _, taken := c.exporters[id]; taken {
		errs = append(errs, fmt.Errorf("%s: exporters::%s is already configured; remove one of the two", b.where(), id))
	}
	exp, _ := deepCopy(c.defaults).(map[string]any)
	if exp == nil {
		exp = map[string]any{}
	}
	override, _ := deepCopy(b.exporter).(map[string]any)
	mergeInto(exp, override)
	exp["endpoint"] = b.endpoint

	if len(b.headers) > 0 {
		headers := map[string]any{}
		record := map[string]any{}
		for _, h := range b.headers {
			env := b.headerEnv(h)
			v, set := c.lookup(env)
			switch {
			case !set:
				errs = append(errs, fmt.Errorf("%s: headers: %s takes its value from the environment variable %s, which is not set (set it from the backend's Secret)", b.where(), h, env))
			case v == "":
				errs = append(errs, fmt.Errorf("%s: headers: %s takes its value from the environment variable %s, which is empty", b.where(), h, env))
			}
			headers[h] = v
			record[h] = env
		}
		exp["headers"] = headers
		// What safeconfigprovider records for a hand-written exporter, so that
		// safeconfigconverter catches two backends sharing one variable.
		c.headerEnvs[id] = record
	}

	switch {
	case b.watchesFiles():
		cw := b.certwatchID()
		errs = append(errs, c.addExtension(b, cw, deepCopy(b.tls))...)
		exp["middlewares"] = []any{map[string]any{"id": cw}}
	case len(b.tls) > 0:
		exp["tls"] = deepCopy(b.tls)
	case b.protocol == "grpc" && strings.HasPrefix(b.endpoint, "http://"):
		// configgrpc negotiates TLS unless told otherwise, whatever the scheme;
		// http:// means plaintext, which safeconfigconverter then only accepts on
		// a backend named plaintext-<name>.
		exp["tls"] = map[string]any{"insecure": true}
	}
	if b.auth != nil {
		ext := b.auth.extensionID(b.name)
		errs = append(errs, c.addExtension(b, ext, b.auth.extension())...)
		exp["auth"] = map[string]any{"authenticator": ext}
	}
	c.exporters[id] = exp

	targets, terrs := c.targets(b)
	errs = append(errs, terrs...)
	if !b.ownPipeline() {
		for _, p := range targets {
			pm := c.pipelines[p].(map[string]any)
			pm["exporters"] = appendOnce(pm["exporters"], id)
		}
		return errs
	}
	return append(errs, c.addOwnPipelines(b, targets)...)
}

func (c *config) addExtension(b *backend, id string, cfg any) []error {
	var errs []error
	if _, taken := c.extensions[id]; taken {
		errs = append(errs, fmt.Errorf("%s: extensions::%s is already configured; remove one of the two", b.where(), id))
	}
	c.extensions[id] = cfg
	c.service["extensions"] = appendOnce(c.service["extensions"], id)
	return errs
}

// targets are the shared pipelines the backend receives from: those it names
// (all by default), of the signals it names (all by default).
func (c *config) targets(b *backend) ([]string, []error) {
	var errs []error
	all := c.shared
	named := b.pipelines
	if len(named) == 0 {
		named = all
	}
	var out []string
	for _, p := range named {
		if _, ok := c.pipelines[p].(map[string]any); !ok || !slices.Contains(c.shared, p) {
			errs = append(errs, fmt.Errorf("%s: pipelines: %q is not in service::pipelines (%s)", b.where(), p, strings.Join(all, ", ")))
			continue
		}
		if len(b.signals) > 0 && !slices.Contains(b.signals, pipelineType(p)) {
			if len(b.pipelines) > 0 {
				errs = append(errs, fmt.Errorf("%s: pipelines: %q carries %s, which signals (%s) leaves out", b.where(), p, pipelineType(p), strings.Join(b.signals, ", ")))
			}
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: receives nothing: no pipeline in service::pipelines (%s) carries its signals (%s)", b.where(), strings.Join(all, ", "), strings.Join(b.signals, ", ")))
	}
	return out, errs
}

// addOwnPipelines gives the backend one pipeline per shared pipeline p: p's
// output through a forward connector, the route's filter, the backend's own
// processors, its exporter. The collector hands each such pipeline its own copy
// of the data when a processor in it changes the data, so one backend's
// processing never changes what another receives.
func (c *config) addOwnPipelines(b *backend, targets []string) []error {
	var errs []error
	var procs []any
	if b.route != nil {
		fid := b.routeFilterID()
		if _, taken := c.processors[fid]; taken {
			errs = append(errs, fmt.Errorf("%s: processors::%s is already configured, and the route needs that id", b.where(), fid))
		}
		if c.newProcessors == nil {
			c.newProcessors = map[string]any{}
		}
		c.newProcessors[fid] = b.route.filterConfig()
		procs = append(procs, fid)
	}
	for _, p := range b.processors {
		if _, ok := c.processors[p]; !ok {
			errs = append(errs, fmt.Errorf("%s: processors: %q is not in the top-level processors (%s)", b.where(), p, strings.Join(slices.Sorted(maps.Keys(c.processors)), ", ")))
		}
		procs = append(procs, p)
	}
	if c.connectors == nil {
		c.connectors = map[string]any{}
	}
	for _, p := range targets {
		fwd := forwardID(p)
		c.connectors[fwd] = map[string]any{}
		pm := c.pipelines[p].(map[string]any)
		pm["exporters"] = appendOnce(pm["exporters"], fwd)
		own := b.backendPipelineID(p)
		if _, taken := c.pipelines[own]; taken {
			errs = append(errs, fmt.Errorf("%s: service::pipelines::%s is already configured; remove one of the two", b.where(), own))
		}
		c.pipelines[own] = map[string]any{
			"receivers":  []any{fwd},
			"processors": slices.Clone(procs),
			"exporters":  []any{b.exporterID()},
		}
	}
	return errs
}

func ensureMap(m map[string]any, k string) map[string]any {
	v, ok := m[k].(map[string]any)
	if !ok {
		v = map[string]any{}
		m[k] = v
	}
	return v
}

func appendOnce(list any, s string) []any {
	l, _ := list.([]any)
	for _, e := range l {
		if e == s {
			return l
		}
	}
	return append(l, s)
}

// mergeInto copies src over dst, recursing into maps present in both.
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if t == nil {
			return map[string]any(nil)
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return t
	}
}
