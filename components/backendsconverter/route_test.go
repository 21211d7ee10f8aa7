// SPDX-License-Identifier: Apache-2.0

package backendsconverter

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/filterprocessor"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-relay/otelcol-relay/components/safeconfigconverter"
)

const routed = `
processors:
  redaction/vendor: {allow_all_keys: true, blocked_values: ['[a-z]+@[a-z.]+']}
backends:
  - name: vendor
    endpoint: https://vendor:4318
    protocol: http
    signals: [logs]
    route: {namespaces: [team-a, team-b]}
    processors: [redaction/vendor]
    auth: {bearer_token: {file: /var/run/secrets/vendor/token}}
  - name: corp
    endpoint: https://corp:4317
    auth: {basic: {username: relay, password_file: /etc/otelcol-relay/backend-auth/corp.password}}
`

func TestExpandRouteProcessorsAuth(t *testing.T) {
	cfg := parse(t, base, routed)
	if err := Expand(cfg, lookup); err != nil {
		t.Fatal(err)
	}
	// vendor: logs only, through its own pipeline behind a forward connector.
	if got := strings.Join(strs(get(cfg, "service", "pipelines", "logs", "exporters").([]any)), ","); got != "otlp_http_wire/default,forward/logs,otlp_grpc/corp" {
		t.Errorf("logs exporters = %s", got)
	}
	if got := strings.Join(strs(get(cfg, "service", "pipelines", "metrics", "exporters").([]any)), ","); got != "otlp_http_wire/default,otlp_grpc/corp" {
		t.Errorf("metrics exporters = %s (vendor takes logs only)", got)
	}
	own := get(cfg, "service", "pipelines", "logs/backend-vendor").(map[string]any)
	for k, want := range map[string]string{
		"receivers":  "forward/logs",
		"processors": "filter/route-vendor,redaction/vendor",
		"exporters":  "otlp_http_wire/vendor",
	} {
		if got := strings.Join(strs(own[k].([]any)), ","); got != want {
			t.Errorf("logs/backend-vendor %s = %s, want %s", k, got, want)
		}
	}
	if _, ok := get(cfg, "connectors").(map[string]any)["forward/logs"]; !ok {
		t.Errorf("connectors = %v", get(cfg, "connectors"))
	}
	if _, ok := get(cfg, "service", "pipelines").(map[string]any)["metrics/backend-vendor"]; ok {
		t.Error("vendor got a metrics pipeline")
	}
	// Auth: an extension per backend, named by the exporter, files only.
	if got := get(cfg, "exporters", "otlp_http_wire/vendor", "auth", "authenticator"); got != "bearertokenauth/vendor" {
		t.Errorf("vendor auth = %v", got)
	}
	if got := get(cfg, "extensions", "bearertokenauth/vendor", "filename"); got != "/var/run/secrets/vendor/token" {
		t.Errorf("bearertokenauth/vendor = %v", get(cfg, "extensions", "bearertokenauth/vendor"))
	}
	if got := get(cfg, "extensions", "basicauth/corp", "client_auth", "password_file"); got != "/etc/otelcol-relay/backend-auth/corp.password" {
		t.Errorf("basicauth/corp = %v", get(cfg, "extensions", "basicauth/corp"))
	}
	if got := strings.Join(strs(get(cfg, "service", "extensions").([]any)), ","); got != "health_check,bearertokenauth/vendor,basicauth/corp" {
		t.Errorf("service::extensions = %s", got)
	}
	safety := safeconfigconverter.NewFactory().Create(confmap.ConverterSettings{})
	if err := safety.Convert(context.Background(), confmap.NewFromStringMap(cfg)); err != nil {
		t.Errorf("safeconfig rejects the expansion: %v", err)
	}
}

// Two routed backends share one connector per pipeline, and neither's pipeline
// feeds the other.
func TestExpandTwoRoutes(t *testing.T) {
	cfg := parse(t, base, `
backends:
  - {name: x, endpoint: "https://x:4317", route: {namespaces: [a]}}
  - {name: yy, endpoint: "https://yy:4317", route: {namespaces: [b]}}
  - {name: all, endpoint: "https://all:4317"}
`)
	if err := Expand(cfg, lookup); err != nil {
		t.Fatal(err)
	}
	pipelines := get(cfg, "service", "pipelines").(map[string]any)
	var ids []string
	for id := range pipelines {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if got := strings.Join(ids, ","); got != "logs,logs/backend-x,logs/backend-yy,metrics,metrics/backend-x,metrics/backend-yy" {
		t.Errorf("pipelines = %s", got)
	}
	for _, id := range []string{"logs/backend-x", "logs/backend-yy"} {
		if got := strings.Join(strs(get(pipelines, id, "exporters").([]any)), ","); strings.Contains(got, "all") || strings.Contains(got, ",") {
			t.Errorf("%s exporters = %s", id, got)
		}
	}
	if got := strings.Join(strs(get(pipelines, "logs", "exporters").([]any)), ","); got != "otlp_http_wire/default,forward/logs,otlp_grpc/all" {
		t.Errorf("logs exporters = %s", got)
	}
}

// The route's filter as the collector runs it: the real filter processor, fed
// records of three namespaces, passes the two the route names and the one its
// condition selects.
func TestRouteFilterSelects(t *testing.T) {
	r, errs := parseRoute("backends[0] (x)", map[string]any{
		"namespaces": []any{"team-a", "team-b"},
		"condition":  `resource.attributes["tenant"] == "gold"`,
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	f := filterprocessor.NewFactory()
	pcfg := f.CreateDefaultConfig()
	if err := confmap.NewFromStringMap(r.filterConfig()).Unmarshal(pcfg); err != nil {
		t.Fatal(err)
	}
	sink := &consumertest.LogsSink{}
	p, err := f.CreateLogs(context.Background(), processortest.NewNopSettings(f.Type()), pcfg, sink)
	if err != nil {
		t.Fatalf("the route's filter does not build: %v", err)
	}
	ld := plog.NewLogs()
	for _, res := range []map[string]string{
		{namespaceKey: "team-a"}, {namespaceKey: "team-b"}, {namespaceKey: "team-c"},
		{namespaceKey: "team-c", "tenant": "gold"}, {},
	} {
		rl := ld.ResourceLogs().AppendEmpty()
		for k, v := range res {
			rl.Resource().Attributes().PutStr(k, v)
		}
		rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr(res[namespaceKey] + "/" + res["tenant"])
	}
	if err := p.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range sink.AllLogs() {
		for i := 0; i < l.ResourceLogs().Len(); i++ {
			got = append(got, l.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords().At(0).Body().Str())
		}
	}
	if strings.Join(got, ",") != "team-a/,team-b/,team-c/gold" {
		t.Errorf("the route passed %v, want team-a, team-b and team-c's gold tenant", got)
	}
}

func TestExpandRouteErrors(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"empty route":      {`backends: [{name: x, endpoint: "https://x", route: {}}]`, "backends[0] (x): route selects nothing"},
		"bad namespace":    {`backends: [{name: x, endpoint: "https://x", route: {namespaces: ["a\" or true or \""]}}]`, `route: namespaces: "a\" or true or \"" is not a namespace name`},
		"route field typo": {`backends: [{name: x, endpoint: "https://x", route: {namespace: [a]}}]`, `backends[0] (x): route: unknown field "namespace"`},
		"unknown signal":   {`backends: [{name: x, endpoint: "https://x", signals: [log]}]`, `backends[0] (x): signals: "log" is not a signal`},
		"no pipeline of its signals": {`backends: [{name: x, endpoint: "https://x", signals: [traces]}]`,
			"backends[0] (x): receives nothing: no pipeline in service::pipelines (logs, metrics) carries its signals (traces)"},
		"pipeline against signals": {`backends: [{name: x, endpoint: "https://x", signals: [logs], pipelines: [metrics]}]`,
			`backends[0] (x): pipelines: "metrics" carries metrics, which signals (logs) leaves out`},
		"unknown processor": {`backends: [{name: x, endpoint: "https://x", processors: [redaction/typo]}]`,
			`backends[0] (x): processors: "redaction/typo" is not in the top-level processors`},
		"literal token": {`backends: [{name: x, endpoint: "https://x", auth: {bearer_token: {token: abc}}}]`,
			"auth::bearer_token::token is not a field (fields: file, header, scheme); credentials come from files"},
		"literal password": {`backends: [{name: x, endpoint: "https://x", auth: {basic: {username: u, password: p}}}]`,
			"auth::basic::password is not a field"},
		"no token file": {`backends: [{name: x, endpoint: "https://x", auth: {bearer_token: {scheme: Bearer}}}]`,
			"auth::bearer_token::file is required"},
		"two auth kinds": {`backends: [{name: x, endpoint: "https://x", auth: {basic: {}, bearer_token: {}}}]`,
			"auth: want a map with one of bearer_token or basic, got a map with 2 keys (basic, bearer_token)"},
		"scheme with a space": {`backends: [{name: x, endpoint: "https://x", auth: {bearer_token: {file: /t, scheme: "Bearer abc"}}}]`,
			"auth::bearer_token::scheme must be one word"},
		"auth and the same header": {`backends: [{name: corp, endpoint: "https://x", headers: [authorization], auth: {bearer_token: {file: /t}}}]`,
			"headers: authorization is also set by auth"},
		"username twice": {`backends: [{name: x, endpoint: "https://x", auth: {basic: {username: u, username_file: /u, password_file: /p}}}]`,
			"auth::basic: give one of username or username_file"},
	} {
		t.Run(name, func(t *testing.T) {
			err := Expand(parse(t, base, tc.doc), func(k string) (string, bool) {
				if strings.HasPrefix(k, "OTEL_EXPORTER_CORP_") {
					return "v", true
				}
				return "", false
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
