// SPDX-License-Identifier: Apache-2.0

// Package safeconfigconverter is the confmap converter of otelcol-relay that turns
// structural exporter mistakes into startup errors. It runs after every --config
// file has been merged and expanded, so it sees the configuration the collector is
// about to run:
//
//   - TLS material (tls::ca_file, cert_file, ...) or a certwatch middleware on a
//     plaintext connection, where it would be silently ignored;
//   - a plaintext connection, or tls::insecure_skip_verify, on an exporter whose
//     name does not say so (otlp_http/plaintext-<name> is the explicit opt-in);
//   - any exporter tls:: field beside certwatch, which builds the TLS itself;
//   - an exporter naming a certwatch/<name> that is not configured, or not enabled in
//     service::extensions; a certwatch instance no exporter uses; certwatch not the
//     last middleware of an otlp_http exporter;
//   - two backends whose headers read the same environment variable (recorded as
//     written by components/safeconfigprovider under safeconfig.HeaderEnvKey);
//   - a backend exporter that no pipeline uses (what a second --config merged without
//     confmap.enableMergeAppendOption silently does to the first backend);
//   - persistent sending queues whose byte bounds do not fit their
//     file_storage / queue_storage volume (upstream's queue loses acknowledged
//     data on a full disk).
//
// It reads the configuration through confmap, with "::" keys unflattened, so a
// flat key ("tls::insecure_skip_verify": true) meets the rule of the field it
// names. Errors name the exporter and the field.
package safeconfigconverter // import "github.com/otelcol-relay/otelcol-relay/components/safeconfigconverter"

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-relay/otelcol-relay/components/internal/safeconfig"
)

// backendTypes are the exporter types whose endpoints and credentials are checked
// (with the deprecated aliases, which still work upstream).
var backendTypes = map[string]string{
	"otlp_grpc": "grpc", "otlp": "grpc",
	"otlp_http": "http", "otlphttp": "http",
	// otlp_http_wire: otlp_http's confighttp client and configuration.
	"otlp_http_wire": "http",
}

type converter struct{}

// NewFactory returns the factory of the safety converter.
func NewFactory() confmap.ConverterFactory {
	return confmap.NewConverterFactory(func(confmap.ConverterSettings) confmap.Converter { return converter{} })
}

func (converter) Convert(_ context.Context, conf *confmap.Conf) error {
	var envs map[string]any
	if conf.IsSet(safeconfig.HeaderEnvKey) {
		envs, _ = conf.Get(safeconfig.HeaderEnvKey).(map[string]any)
		// The record has done its job; the collector itself must never see it.
		conf.Delete(safeconfig.HeaderEnvKey)
	}
	var listFiles map[string]any
	if conf.IsSet(safeconfig.ListFilesKey) {
		listFiles, _ = conf.Get(safeconfig.ListFilesKey).(map[string]any)
		conf.Delete(safeconfig.ListFilesKey)
	}
	if err := checkListMerge(listFiles, mergeAppendEnabled()); err != nil {
		// Every other finding would only describe the damage the merge did.
		return fmt.Errorf("safeconfig: %w", err)
	}
	cfg := conf.ToStringMap()
	errs := append(check(cfg, envs), checkQueueVolumes(cfg, volumeSize)...)
	if len(errs) > 0 {
		return fmt.Errorf("safeconfig: %w", errors.Join(errs...))
	}
	return nil
}

// check returns one error per rule violation in an expanded config. headerEnvs is
// safeconfigprovider's record (exporter id -> header -> env names), or nil.
func check(cfg map[string]any, headerEnvs map[string]any) []error {
	exporters := asMap(cfg["exporters"])
	service := asMap(cfg["service"])
	enabled := map[string]bool{}
	for _, id := range asList(service["extensions"]) {
		if s, ok := id.(string); ok {
			enabled[s] = true
		}
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(exporters)) {
		typ, name := splitID(id)
		if proto, ok := backendTypes[typ]; ok {
			errs = append(errs, checkTransport(id, name, proto, asMap(exporters[id]))...)
		}
	}
	errs = append(errs, checkCertwatchWiring(exporters, asMap(cfg["extensions"]), enabled)...)
	errs = append(errs, checkEnvCollisions(exporters, headerEnvs)...)
	errs = append(errs, checkUnusedBackends(exporters, asMap(service["pipelines"]))...)
	return errs
}

func splitID(id string) (typ, name string) {
	typ, name, _ = strings.Cut(id, "/")
	return typ, name
}

func typeOf(id string) string { t, _ := splitID(id); return t }

func isZero(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case bool:
		return !t
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
