// SPDX-License-Identifier: Apache-2.0

package safeconfigconverter

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/confmap"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/components/backendsconverter"
	"github.com/otelcol-relay/otelcol-relay/components/safeconfigprovider"
	"github.com/otelcol-relay/otelcol-relay/components/strictenvprovider"
)

// resolveChain resolves files with the providers and converters in the order
// cmd/otelcol-relay wires them: the rules must hold for what comes out of the
// whole chain, whatever an earlier converter did.
func resolveChain(t *testing.T, files ...string) (*confmap.Conf, error) {
	t.Helper()
	return resolveWith(t, []confmap.ProviderFactory{strictenvprovider.NewFactory(), safeconfigprovider.NewFactory()},
		[]confmap.ConverterFactory{backendsconverter.NewFactory(), NewFactory()}, files...)
}

// A spelling writes the same configuration with different keys: confmap
// unflattens "a::b" keys of maps (confmap.KeyDelimiter) before any component
// sees them, so all three are one configuration to the collector.
type spelling func(doc map[string]any) map[string]any

var spellings = map[string]spelling{
	"nested": func(doc map[string]any) map[string]any { return doc },
	// Every component, service, backend_defaults and backends entry written with
	// flat keys: otlp_grpc/x: {"headers::X-Api-Key": v, "tls::ca_file": f}.
	"flat": func(doc map[string]any) map[string]any {
		return respell(doc, func(parent map[string]any, key string) { parent[key] = flatten(asMap(parent[key])) })
	},
	// Both at once: the first map-valued field lifted into the parent's key
	// ("otlp_grpc/x::tls": {...}) beside the rest of the block, whose maps are
	// written flat.
	"mixed": func(doc map[string]any) map[string]any {
		return respell(doc, func(parent map[string]any, key string) {
			m := asMap(parent[key])
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if sub, ok := m[k].(map[string]any); ok && len(sub) > 0 {
					parent[key+"::"+k] = sub
					delete(m, k)
					break
				}
			}
			parent[key] = flatten(m)
		})
	},
}

// respell applies f to each block that one part of a config owns.
func respell(doc map[string]any, f func(parent map[string]any, key string)) map[string]any {
	for _, section := range []string{"receivers", "processors", "exporters", "extensions", "connectors"} {
		s := asMap(doc[section])
		for _, id := range slices.Sorted(maps.Keys(s)) {
			if len(asMap(s[id])) > 0 {
				f(s, id)
			}
		}
	}
	for _, k := range []string{"service", backendsconverter.DefaultsKey} {
		if len(asMap(doc[k])) > 0 {
			f(doc, k)
		}
	}
	for _, e := range asList(doc[backendsconverter.BackendsKey]) {
		entry := asMap(e)
		for _, k := range slices.Sorted(maps.Keys(entry)) {
			if len(asMap(entry[k])) > 0 {
				f(entry, k)
			}
		}
	}
	return doc
}

func flatten(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			for sk, sv := range flatten(sub) {
				out[k+"::"+sk] = sv
			}
			continue
		}
		out[k] = v
	}
	return out
}

// The secret in the bad cases: no error may print it.
const literalSecret = "literal-SECRET-5e1f"

// ruleBase is one hand-written backend, corp, with its Secret-backed header.
const ruleBase = `
exporters:
  otlp_grpc/corp:
    endpoint: https://collector.corp.example:4317
    headers:
      Authorization: ${env:OTEL_EXPORTER_CORP_AUTHORIZATION}
service:
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [otlp_grpc/corp]
`

// badCase breaks one rule with a second backend, vendor, written either as a
// hand-written exporter or as a backends: entry whose exporter: block carries
// the same fields.
type badCase struct {
	name     string
	typ      string // the hand-written exporter's type
	exporter string // its config, YAML
	extra    string // more of the same file (extensions, processors)
	fragment string // a second --config file (hand-written only)
	want     string // the hand-written error
	// key is the field both errors name; noBackends says why a backends: entry
	// cannot express the case.
	key, noBackends string
}

var badCases = []badCase{
	{name: "literal credential header", typ: "otlp_grpc",
		exporter: "{endpoint: 'https://collector.vendor.example:4317', headers: {X-Api-Key: " + literalSecret + "}}",
		want:     "exporters::otlp_grpc/vendor: headers::X-Api-Key is a credential written as a literal value", key: "headers"},
	{name: "literal credential header, other case", typ: "otlp",
		exporter: "{endpoint: 'https://collector.vendor.example:4317', Headers: {authorization: 'Bearer " + literalSecret + "'}}",
		want:     "exporters::otlp/vendor: Headers::authorization is a credential written as a literal value", key: "headers"},
	{name: "literal tls key_pem", typ: "otlp_grpc",
		exporter: "{endpoint: 'https://collector.vendor.example:4317', tls: {cert_pem: '${env:VENDOR_CERT}', key_pem: " + literalSecret + "}}",
		want:     "exporters::otlp_grpc/vendor::tls::key_pem is a credential written as a literal value", key: "key_pem"},
	{name: "password in the endpoint", typ: "otlp_http",
		exporter: "{endpoint: 'https://relay:" + literalSecret + "@collector.vendor.example:4318'}",
		want:     "exporters::otlp_http/vendor::endpoint has a password in its userinfo", key: "endpoint"},
	{name: "another backend's header variable", typ: "otlp_grpc",
		exporter: "{endpoint: 'https://collector.vendor.example:4317', headers: {Authorization: '${env:OTEL_EXPORTER_CORP_AUTHORIZATION}'}}",
		want:     "environment variable OTEL_EXPORTER_CORP_AUTHORIZATION is read by more than one backend (exporters::otlp_grpc/corp: headers::Authorization; exporters::otlp_grpc/vendor: headers::Authorization)", key: "headers"},
	{name: "another backend's header variable, deprecated alias", typ: "otlphttp",
		exporter: "{endpoint: 'https://collector.vendor.example:4318', headers: {authorization: '${env:OTEL_EXPORTER_CORP_AUTHORIZATION}'}}",
		want:     "exporters::otlphttp/vendor: headers::authorization", key: "headers"},
	{name: "tls material on plaintext", typ: "otlp_http",
		exporter: "{endpoint: 'http://collector.vendor.example:4318', tls: {ca_file: /certs/vendor/ca.crt}}",
		want:     "exporters::otlp_http/vendor: tls::ca_file is set but the connection is plaintext", key: "tls"},
	{name: "plaintext without the opt-in", typ: "otlp_grpc",
		exporter: "{endpoint: 'collector.vendor.example:4317', tls: {insecure: true}}",
		want:     "exporters::otlp_grpc/vendor: plaintext connection (tls::insecure true): TLS is required", key: "tls"},
	{name: "insecure with TLS anyway", typ: "otlp_grpc",
		exporter: "{endpoint: 'collector.vendor.example:4317', tls: {insecure: true, ca_file: /certs/vendor/ca.crt}}",
		want:     "exporters::otlp_grpc/vendor: tls::insecure is true but the connection uses TLS anyway", key: "tls"},
	{name: "skip verify without the opt-in", typ: "otlp_http",
		exporter: "{endpoint: 'https://collector.vendor.example:4318', tls: {insecure_skip_verify: true}}",
		want:     "exporters::otlp_http/vendor: tls::insecure_skip_verify is true", key: "tls"},
	{name: "missing certwatch", typ: "otlp_http",
		exporter: "{endpoint: 'https://collector.vendor.example:4318', middlewares: [{id: certwatch/vendor}]}",
		want:     `exporters::otlp_http/vendor: middlewares[0]::id "certwatch/vendor" names a certwatch instance that is not configured`, key: "middlewares"},
	{name: "tls beside certwatch", typ: "otlp_http",
		exporter: "{endpoint: 'https://collector.vendor.example:4318', middlewares: [{id: certwatch/vendor}], tls: {min_version: '1.3'}}",
		extra:    "extensions: {certwatch/vendor: {ca_file: /certs/vendor/ca.crt}}\nservice: {extensions: [certwatch/vendor]}\n",
		want:     "exporters::otlp_http/vendor: tls::min_version is set, but certwatch/vendor builds this exporter's TLS configuration itself", key: "tls"},
	{name: "queue bounds beyond the volume", typ: "otlp_http",
		exporter: "{endpoint: 'https://collector.vendor.example:4318', sending_queue: {storage: file_storage/vendor, sizer: bytes, queue_size: 1125899906842624}}",
		extra:    "extensions: {file_storage/vendor: {directory: /}}\n",
		want:     "exporters::otlp_http/vendor: sending_queue::queue_size 1125899906842624 bytes", key: "sending_queue::queue_size"},
	{name: "unused backend", typ: "otlp_http",
		exporter: "{endpoint: 'https://collector.vendor.example:4318'}",
		extra:    "service: {pipelines: {logs: {exporters: [otlp_grpc/corp]}}}\n",
		want:     "exporters::otlp_http/vendor: no pipeline in service::pipelines sends to it", key: "pipeline",
		noBackends: "an entry is always added to a pipeline"},
	{name: "service lists replaced by a second file", typ: "otlp_http",
		exporter: "{endpoint: 'https://collector.vendor.example:4318'}",
		fragment: "service: {extensions: [], pipelines: {logs: {exporters: [otlp_grpc/corp, otlp_http/vendor]}}}\n",
		want:     "b.yaml each set lists under service::", key: "service",
		noBackends: "a backends: list is one file"},
}

// handWritten is ruleBase plus c's exporter, sent to by the logs pipeline.
func (c badCase) handWritten(t *testing.T) []map[string]any {
	doc := parse(t, ruleBase)
	id := c.typ + "/vendor"
	asMap(doc["exporters"])[id] = parse(t, c.exporter)
	logs := asMap(asMap(asMap(doc["service"])["pipelines"])["logs"])
	logs["exporters"] = append(asList(logs["exporters"]), id)
	docs := []map[string]any{merge(doc, section(t, c.extra))}
	if c.fragment != "" {
		docs = append(docs, parse(t, c.fragment))
	}
	return docs
}

// throughBackends is ruleBase plus c's exporter as a backends: entry.
func (c badCase) throughBackends(t *testing.T) map[string]any {
	doc := merge(parse(t, ruleBase), section(t, c.extra))
	exp := parse(t, c.exporter)
	entry := map[string]any{"name": "vendor", "endpoint": exp["endpoint"], "protocol": "grpc"}
	if backendTypes[c.typ] == "http" {
		entry["protocol"] = "http"
	}
	delete(exp, "endpoint")
	if len(exp) > 0 {
		entry["exporter"] = exp
	}
	doc[backendsconverter.BackendsKey] = []any{entry}
	return doc
}

// merge adds src's top-level sections to dst, one level down.
func merge(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if d, ok := dst[k].(map[string]any); ok {
			for sk, sv := range asMap(v) {
				if dm, ok := d[sk].(map[string]any); ok && len(asMap(sv)) > 0 {
					maps.Copy(dm, asMap(sv))
					continue
				}
				d[sk] = sv
			}
			continue
		}
		dst[k] = v
	}
	return dst
}

// section parses a YAML snippet; "" is an empty one.
func section(t *testing.T, s string) map[string]any {
	t.Helper()
	if strings.TrimSpace(s) == "" {
		return map[string]any{}
	}
	return parse(t, s)
}

func render(t *testing.T, doc map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every rule judges the configuration the collector will run, however the YAML
// spells its keys, and whether a backend is written by hand or as a backends:
// entry.
func TestEveryRuleEverySpelling(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_CORP_AUTHORIZATION", "Bearer corp-secret-a81d")
	t.Setenv("VENDOR_CERT", "cert")
	for _, c := range badCases {
		for _, sp := range slices.Sorted(maps.Keys(spellings)) {
			t.Run(c.name+"/hand-written/"+sp, func(t *testing.T) {
				var files []string
				for _, d := range c.handWritten(t) {
					files = append(files, render(t, spellings[sp](d)))
				}
				_, err := resolveChain(t, files...)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v\nwant an error containing %q; config:\n%s", err, c.want, strings.Join(files, "---\n"))
				}
				assertNoSecret(t, err)
			})
			if c.noBackends != "" {
				continue
			}
			t.Run(c.name+"/backends/"+sp, func(t *testing.T) {
				file := render(t, spellings[sp](c.throughBackends(t)))
				_, err := resolveChain(t, file)
				if err == nil || !strings.Contains(err.Error(), "vendor") || !strings.Contains(strings.ToLower(err.Error()), c.key) {
					t.Fatalf("got %v\nwant an error naming vendor and %s; config:\n%s", err, c.key, file)
				}
				assertNoSecret(t, err)
			})
		}
	}
}

func assertNoSecret(t *testing.T, err error) {
	t.Helper()
	for _, s := range []string{literalSecret, "corp-secret"} {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("error prints a secret: %v", err)
		}
	}
}

// The same spellings of valid configurations pass: no rule mistakes a flat key
// for a second value.
func TestValidConfigsPassEverySpelling(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_CORP_AUTHORIZATION", "Bearer corp-secret-a81d")
	t.Setenv("OTEL_EXPORTER_VENDOR_AUTHORIZATION", "Bearer vendor-secret-77c0")
	handWritten := ruleBase + `
extensions:
  certwatch/vendor: {ca_file: /certs/vendor/ca.crt, cert_file: /certs/vendor/tls.crt, key_file: /certs/vendor/tls.key}
`
	vendor := `
otlp_grpc/vendor:
  endpoint: https://collector.vendor.example:4317
  headers: {Authorization: "${env:OTEL_EXPORTER_VENDOR_AUTHORIZATION}"}
  middlewares: [{id: certwatch/vendor}]
  sending_queue: {enabled: true, num_consumers: 2}
`
	backends := ruleBase + `
backend_defaults:
  retry_on_failure: {enabled: true, max_elapsed_time: 0s}
backends:
  - name: vendor
    endpoint: https://collector.vendor.example:4317
    headers: [Authorization]
    tls: {ca_file: /certs/vendor/ca.crt, cert_file: /certs/vendor/tls.crt, key_file: /certs/vendor/tls.key}
    exporter: {sending_queue: {enabled: true, num_consumers: 2}}
`
	for _, sp := range slices.Sorted(maps.Keys(spellings)) {
		t.Run("hand-written/"+sp, func(t *testing.T) {
			doc := parse(t, handWritten)
			maps.Copy(asMap(doc["exporters"]), parse(t, vendor))
			asMap(doc["service"])["extensions"] = []any{"certwatch/vendor"}
			logs := asMap(asMap(asMap(doc["service"])["pipelines"])["logs"])
			logs["exporters"] = append(asList(logs["exporters"]), "otlp_grpc/vendor")
			file := render(t, spellings[sp](doc))
			conf, err := resolveChain(t, file)
			if err != nil {
				t.Fatalf("%v\nconfig:\n%s", err, file)
			}
			if got := conf.Get("exporters::otlp_grpc/vendor::headers::Authorization"); got != "Bearer vendor-secret-77c0" {
				t.Fatalf("vendor's Authorization = %v", got)
			}
		})
		t.Run("backends/"+sp, func(t *testing.T) {
			file := render(t, spellings[sp](parse(t, backends)))
			conf, err := resolveChain(t, file)
			if err != nil {
				t.Fatalf("%v\nconfig:\n%s", err, file)
			}
			if got := conf.Get("exporters::otlp_grpc/vendor::sending_queue::num_consumers"); got != 2 {
				t.Fatalf("vendor's sending_queue::num_consumers = %v", got)
			}
		})
	}
}
