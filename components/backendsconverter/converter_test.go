// SPDX-License-Identifier: Apache-2.0

package backendsconverter

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/confmap"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/components/internal/safeconfig"
	"github.com/otelcol-relay/otelcol-relay/components/safeconfigconverter"
)

const base = `
exporters:
  otlp_http_wire/default: {endpoint: "https://default:4318"}
service:
  extensions: [health_check]
  pipelines:
    logs: {receivers: [otlp], exporters: [otlp_http_wire/default]}
    metrics: {receivers: [otlp], exporters: [otlp_http_wire/default]}
`

var env = map[string]string{
	"OTEL_EXPORTER_CORP_AUTHORIZATION": "Bearer corp-secret",
	"OTEL_EXPORTER_DATADOG_DD_API_KEY": "dd-secret",
}

func lookup(k string) (string, bool) { v, ok := env[k]; return v, ok }

func parse(t *testing.T, docs ...string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, d := range docs {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatal(err)
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func get(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		v = v.(map[string]any)[p]
	}
	return v
}

func TestExpandThreeKinds(t *testing.T) {
	cfg := parse(t, base, `
backend_defaults:
  compression: gzip
  sending_queue: {enabled: true, num_consumers: 4}
backends:
  - name: corp
    endpoint: https://corp:4317
    protocol: grpc
    headers: [Authorization]
    tls: {ca_file: /certs/exporter-cas/corp.crt, cert_file: /certs/exporter-certs/corp.crt, key_file: /certs/exporter-certs/corp.key}
  - name: datadog
    endpoint: https://otlp.datadoghq.com:4318
    protocol: http
    headers: [DD-API-KEY]
    exporter: {sending_queue: {num_consumers: 2}}
  - name: plaintext-mesh
    endpoint: http://mesh:4317
    pipelines: [logs]
`)
	if err := Expand(cfg, lookup); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{BackendsKey, DefaultsKey} {
		if _, ok := cfg[k]; ok {
			t.Errorf("%s left in the config", k)
		}
	}
	corp := get(cfg, "exporters", "otlp_grpc/corp").(map[string]any)
	if corp["endpoint"] != "https://corp:4317" || get(corp, "headers", "Authorization") != "Bearer corp-secret" || corp["compression"] != "gzip" {
		t.Errorf("otlp_grpc/corp = %v", corp)
	}
	if mw := corp["middlewares"].([]any); len(mw) != 1 || mw[0].(map[string]any)["id"] != "certwatch/corp" {
		t.Errorf("otlp_grpc/corp middlewares = %v", mw)
	}
	if get(cfg, "extensions", "certwatch/corp", "cert_file") != "/certs/exporter-certs/corp.crt" {
		t.Errorf("certwatch/corp = %v", get(cfg, "extensions", "certwatch/corp"))
	}
	dd := get(cfg, "exporters", "otlp_http_wire/datadog").(map[string]any)
	if _, ok := dd["middlewares"]; ok {
		t.Errorf("header-only backend got a middleware: %v", dd)
	}
	if _, ok := dd["tls"]; ok {
		t.Errorf("header-only backend got a tls block: %v", dd)
	}
	if fmt.Sprint(get(dd, "sending_queue", "num_consumers")) != "2" || get(dd, "sending_queue", "enabled") != true {
		t.Errorf("exporter override not merged over defaults: %v", dd["sending_queue"])
	}
	if got := get(cfg, "extensions", "certwatch/datadog"); got != nil {
		t.Errorf("header-only backend got certwatch: %v", got)
	}
	mesh := get(cfg, "exporters", "otlp_grpc/plaintext-mesh").(map[string]any)
	if get(mesh, "tls", "insecure") != true {
		t.Errorf("plaintext gRPC backend without tls::insecure: %v", mesh)
	}
	logs := get(cfg, "service", "pipelines", "logs", "exporters").([]any)
	metrics := get(cfg, "service", "pipelines", "metrics", "exporters").([]any)
	if s := strings.Trim(strings.Join(strs(logs), ","), ","); s != "otlp_http_wire/default,otlp_grpc/corp,otlp_http_wire/datadog,otlp_grpc/plaintext-mesh" {
		t.Errorf("logs exporters = %s", s)
	}
	if s := strings.Join(strs(metrics), ","); s != "otlp_http_wire/default,otlp_grpc/corp,otlp_http_wire/datadog" {
		t.Errorf("metrics exporters = %s", s)
	}
	if s := strings.Join(strs(get(cfg, "service", "extensions").([]any)), ","); s != "health_check,certwatch/corp" {
		t.Errorf("service::extensions = %s", s)
	}
	if got := get(cfg, safeconfig.HeaderEnvKey, "otlp_http_wire/datadog", "DD-API-KEY"); got != "OTEL_EXPORTER_DATADOG_DD_API_KEY" {
		t.Errorf("header env record = %v", got)
	}
	// The safety rules see the result as they would a hand-written backend.
	safety := safeconfigconverter.NewFactory().Create(confmap.ConverterSettings{})
	if err := safety.Convert(context.Background(), confmap.NewFromStringMap(cfg)); err != nil {
		t.Errorf("safeconfig rejects the expansion: %v", err)
	}
}

func strs(l []any) []string {
	out := make([]string, len(l))
	for i, e := range l {
		out[i], _ = e.(string)
	}
	return out
}

func TestExpandErrors(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"unset header variable": {`backends: [{name: corp, endpoint: "https://c:4317", headers: [X-Token]}]`,
			"backends[0] (corp): headers: X-Token takes its value from the environment variable OTEL_EXPORTER_CORP_X_TOKEN, which is not set"},
		"bad name":         {`backends: [{name: Corp_1, endpoint: "https://c:4317"}]`, `name "Corp_1" must be a DNS label`},
		"no endpoint":      {`backends: [{name: corp}]`, "backends[0] (corp): endpoint is required"},
		"bad protocol":     {`backends: [{name: corp, endpoint: "https://c", protocol: thrift}]`, "protocol thrift must be grpc or http"},
		"unknown field":    {`backends: [{name: corp, endpoint: "https://c", ca: x}]`, `unknown field "ca"`},
		"duplicate name":   {`backends: [{name: corp, endpoint: "https://c"}, {name: corp, endpoint: "https://d"}]`, `backends[1] (corp): name "corp" is already used by backends[0]`},
		"taken exporter":   {`backends: [{name: default, endpoint: "https://c", protocol: http}]`, "exporters::otlp_http_wire/default is already configured"},
		"unknown pipeline": {`backends: [{name: corp, endpoint: "https://c", pipelines: [traces]}]`, `pipelines: "traces" is not in service::pipelines (logs, metrics)`},
		"headers in defaults": {"backend_defaults: {headers: {X-A: b}}\nbackends: [{name: corp, endpoint: \"https://c\"}]",
			"backend_defaults: headers cannot be set here"},
		"tls in exporter override": {`backends: [{name: corp, endpoint: "https://c", exporter: {tls: {insecure: true}}}]`,
			"backends[0] (corp): exporter: tls cannot be set here"},
		// The exporter block becomes a map the collector unflattens: a flat key
		// or another case is the field it names.
		"flat headers in exporter override": {`backends: [{name: vendor, endpoint: "https://collector.vendor.example", exporter: {"headers::Authorization": "${env:OTEL_EXPORTER_CORP_AUTHORIZATION}"}}]`,
			"backends[0] (vendor): exporter: headers cannot be set here"},
		"flat headers on the entry": {`backends: [{name: vendor, endpoint: "https://c", "exporter::headers::Authorization": "x"}]`,
			"backends[0] (vendor): exporter: headers cannot be set here"},
		"flat tls in exporter override": {`backends: [{name: vendor, endpoint: "https://c", exporter: {"tls::insecure": true}}]`,
			"backends[0] (vendor): exporter: tls cannot be set here"},
		"headers in another case": {`backends: [{name: vendor, endpoint: "https://c", exporter: {Headers: {Authorization: x}}}]`,
			"backends[0] (vendor): exporter: Headers cannot be set here"},
		"flat headers in defaults": {"backend_defaults: {\"headers::X-A\": b}\nbackends: [{name: corp, endpoint: \"https://c\"}]",
			"backend_defaults: headers cannot be set here"},
		"poll without files": {`backends: [{name: corp, endpoint: "https://c", tls: {poll_interval: 1s}}]`,
			"tls::poll_interval only applies with ca_file or cert_file/key_file"},
	} {
		t.Run(name, func(t *testing.T) {
			err := Expand(parse(t, base, tc.doc), lookup)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// The secret never reaches an error message, even when something else is wrong.
func TestExpandErrorsHoldNoValue(t *testing.T) {
	err := Expand(parse(t, base, `backends: [{name: corp, endpoint: "https://c", headers: [Authorization], pipelines: [nope]}]`), lookup)
	if err == nil || strings.Contains(err.Error(), "corp-secret") {
		t.Fatalf("error = %v", err)
	}
}

// The converter as the resolver runs it: the list goes, the rest is replaced whole
// (no list appended twice, whatever the merge mode).
func TestConvert(t *testing.T) {
	conf := confmap.NewFromStringMap(parse(t, base, `backends: [{name: datadog, endpoint: "https://dd:4318", protocol: http, headers: [DD-API-KEY]}]`))
	if err := (converter{lookup: lookup}).Convert(context.Background(), conf); err != nil {
		t.Fatal(err)
	}
	if conf.IsSet(BackendsKey) {
		t.Error("backends left in the config")
	}
	if got := conf.Get("service::pipelines::logs::exporters"); len(got.([]any)) != 2 {
		t.Errorf("logs exporters = %v", got)
	}
	if got := conf.Get("exporters::otlp_http_wire/datadog::endpoint"); got != "https://dd:4318" {
		t.Errorf("endpoint = %v", got)
	}
	none := confmap.NewFromStringMap(parse(t, base))
	if err := (converter{lookup: lookup}).Convert(context.Background(), none); err != nil {
		t.Fatal(err)
	}
	if len(none.Get("service::pipelines::logs::exporters").([]any)) != 1 {
		t.Error("a config without backends changed")
	}
}

// Flat keys on an entry mean what the nested ones do.
func TestExpandFlatEntry(t *testing.T) {
	cfg := parse(t, base, `
backends:
  - name: corp
    endpoint: https://corp:4317
    "tls::ca_file": /certs/exporter-cas/corp.crt
    "exporter::sending_queue::num_consumers": 2
`)
	if err := Expand(cfg, lookup); err != nil {
		t.Fatal(err)
	}
	if got := get(cfg, "extensions", "certwatch/corp", "ca_file"); got != "/certs/exporter-cas/corp.crt" {
		t.Errorf("certwatch/corp ca_file = %v", got)
	}
	if got := fmt.Sprint(get(cfg, "exporters", "otlp_grpc/corp", "sending_queue", "num_consumers")); got != "2" {
		t.Errorf("sending_queue::num_consumers = %v", got)
	}
}
