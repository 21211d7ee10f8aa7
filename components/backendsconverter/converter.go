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
	for _, k := range []string{BackendsKey, DefaultsKey, "exporters", "extensions", "service", safeconfig.HeaderEnvKey} {
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

	exporters := ensureMap(cfg, "exporters")
	extensions := ensureMap(cfg, "extensions")
	service := ensureMap(cfg, "service")
	pipelines, _ := service["pipelines"].(map[string]any)
	if len(pipelines) == 0 {
		return errors.New("service::pipelines is empty: the backends need pipelines to be added to")
	}
	headerEnvs := ensureMap(cfg, safeconfig.HeaderEnvKey)

	for _, b := range backends {
		errs = append(errs, add(b, defaults, exporters, extensions, service, pipelines, headerEnvs, lookup)...)
	}
	if len(headerEnvs) == 0 {
		delete(cfg, safeconfig.HeaderEnvKey)
	}
	return errors.Join(errs...)
}

// add expands one backend into the config's maps.
func add(b *backend, defaults, exporters, extensions, service, pipelines, headerEnvs map[string]any, lookup func(string) (string, bool)) []error {
	var errs []error
	id := b.exporterID()
	if _, taken := exporters[id]; taken {
		errs = append(errs, fmt.Errorf("%s: exporters::%s is already configured; remove one of the two", b.where(), id))
	}
	exp, _ := deepCopy(defaults).(map[string]any)
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
			v, set := lookup(env)
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
		headerEnvs[id] = record
	}

	switch {
	case b.watchesFiles():
		cw := b.certwatchID()
		if _, taken := extensions[cw]; taken {
			errs = append(errs, fmt.Errorf("%s: extensions::%s is already configured; remove one of the two", b.where(), cw))
		}
		extensions[cw] = deepCopy(b.tls)
		service["extensions"] = appendOnce(service["extensions"], cw)
		exp["middlewares"] = []any{map[string]any{"id": cw}}
	case len(b.tls) > 0:
		exp["tls"] = deepCopy(b.tls)
	case b.protocol == "grpc" && strings.HasPrefix(b.endpoint, "http://"):
		// configgrpc negotiates TLS unless told otherwise, whatever the scheme;
		// http:// means plaintext, which safeconfigconverter then only accepts on
		// a backend named plaintext-<name>.
		exp["tls"] = map[string]any{"insecure": true}
	}
	exporters[id] = exp

	targets := b.pipelines
	if len(targets) == 0 {
		targets = slices.Sorted(maps.Keys(pipelines))
	}
	for _, p := range targets {
		pm, ok := pipelines[p].(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: pipelines: %q is not in service::pipelines (%s)", b.where(), p, strings.Join(slices.Sorted(maps.Keys(pipelines)), ", ")))
			continue
		}
		pm["exporters"] = appendOnce(pm["exporters"], id)
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
