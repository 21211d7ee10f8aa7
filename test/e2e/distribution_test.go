// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

func TestComponentsListsEveryComponent(t *testing.T) {
	out, code := e2e.Run(t, time.Minute, nil, "components")
	if code != 0 {
		t.Fatalf("components exited %d:\n%s", code, out)
	}
	for _, name := range []string{
		"otlp", "prometheus", "kubelet_stats",
		"memory_limiter", "batch", "k8s_attributes",
		"otlp_grpc", "otlp_http", "debug",
		"health_check", "file_storage", "pprof", "certwatch",
		"federation_types", "groupbyattrs", "gomemlimit", "admission", "queue_storage",
		"pod_identity", "attributes_to_resource", "otlp_http_pooled",
	} {
		if !regexp.MustCompile(`(?m)^\s*- name: ` + regexp.QuoteMeta(name) + `\s*$`).MatchString(out) {
			t.Errorf("components does not list %q", name)
		}
	}
	for _, scheme := range []string{"env", "file", "yaml"} {
		if !regexp.MustCompile(`(?m)^\s*- scheme: ` + scheme + `\s*$`).MatchString(out) {
			t.Errorf("components does not list the %q provider", scheme)
		}
	}
	if t.Failed() {
		t.Logf("components output:\n%s", out)
	}
}

func TestVersionIsStampedAtBuild(t *testing.T) {
	out, code := e2e.Run(t, time.Minute, nil, "--version")
	if code != 0 {
		t.Fatalf("--version exited %d: %s", code, out)
	}
	if !strings.HasPrefix(out, "otelcol-relay version ") {
		t.Fatalf("--version printed %q", out)
	}
	if strings.Contains(out, "0.0.0-dev") {
		t.Fatalf("--version printed the unstamped default %q: the build did not set -X main.version", out)
	}
}

// sameRecord compares everything a relay must carry unchanged.
func TestInvalidConfigsFailWithClearErrors(t *testing.T) {
	const valid = `
receivers:
  otlp:
    protocols: {http: {endpoint: "127.0.0.1:0"}}
exporters:
  debug: {}
service:
  pipelines:
    logs: {receivers: [otlp], exporters: [debug]}
`
	edit := func(from, to string) string { return strings.Replace(valid, from, to, 1) }
	cases := []struct {
		name   string
		config string
		want   []string
	}{
		{"unknown component", edit("debug: {}", "debug: {}\n  kafka: {}"), []string{"kafka", "unknown type"}},
		{"misspelt key", edit("debug: {}", "debug: {verbosityy: detailed}"), []string{"verbosityy"}},
		{"missing env var", edit("debug: {}", "otlp_http:\n    endpoint: ${env:RELAY_TEST_UNSET_BACKEND}\n  debug: {}"), []string{"RELAY_TEST_UNSET_BACKEND", "not set"}},
		{"pipeline names an undefined exporter", edit("exporters: [debug]", "exporters: [debug, otlp_grpc/missing]"), []string{"otlp_grpc/missing"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := e2e.WriteConfig(t, tc.config)
			for _, args := range [][]string{
				{"validate", "--config", path},
				{"--config", path},
			} {
				out, code := e2e.Run(t, time.Minute, nil, args...)
				if code == 0 {
					t.Fatalf("%v exited 0, want an error:\n%s", args, out)
				}
				for _, w := range tc.want {
					if !strings.Contains(out, w) {
						t.Errorf("%v: output does not name %q:\n%s", args, w, out)
					}
				}
			}
		})
	}
}

// TestLocalConfigShowsTelemetry runs config/local.yaml, the config of `make run`, on
// free ports: with no client at all the console shows the collector's own metrics
// within 15 seconds, and Ctrl-C (SIGINT) exits 0.
func TestLocalConfigShowsTelemetry(t *testing.T) {
	metricsPort := e2e.FreePort(t)
	c := e2e.Start(t, "", e2e.Options{
		Args: []string{"--config", filepath.Join(e2e.RepoRoot(), "config", "local.yaml")},
		Env: []string{
			"RELAY_OTLP_GRPC_ENDPOINT=" + e2e.FreeAddr(t),
			"RELAY_OTLP_HTTP_ENDPOINT=" + e2e.FreeAddr(t),
			"RELAY_HEALTH_ENDPOINT=" + e2e.FreeAddr(t),
			"RELAY_PPROF_ENDPOINT=" + e2e.FreeAddr(t),
			"RELAY_METRICS_PORT=" + strconv.Itoa(metricsPort),
		},
	})
	// The debug exporter at verbosity normal prints one line per metric data point.
	if err := c.WaitForOutput("otelcol_process_uptime", 15*time.Second); err != nil {
		t.Fatalf("no telemetry on the console within 15s: %v", err)
	}
	if err := c.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code, err := c.Wait(30 * time.Second); err != nil || code != 0 {
		t.Fatalf("Ctrl-C: exit %d, %v", code, err)
	}
}

// The build keeps the service discoveries a Kubernetes relay uses (Makefile
// BUILDTAGS): kubernetes and dns, plus file and http, which Prometheus always
// has. A scrape config that names one the build leaves out is refused at
// start, naming the field, instead of starting without its targets.
func TestServiceDiscoveryInTheBuild(t *testing.T) {
	config := func(sd string) string {
		return `
receivers:
  prometheus:
    config:
      scrape_configs:
        - job_name: sd
` + sd + `
exporters:
  debug: {}
service:
  pipelines:
    metrics: {receivers: [prometheus], exporters: [debug]}
`
	}
	kept := map[string]string{
		"kubernetes": "          kubernetes_sd_configs: [{role: pod}]",
		"dns":        "          dns_sd_configs: [{names: [prometheus.example], type: A, port: 9090}]",
		"file":       "          file_sd_configs: [{files: [/etc/relay/targets.json]}]",
		"http":       "          http_sd_configs: [{url: https://sd.example/targets}]",
	}
	for name, sd := range kept {
		t.Run(name, func(t *testing.T) {
			if out, code := e2e.Run(t, time.Minute, nil, "validate", "--config", e2e.WriteConfig(t, config(sd))); code != 0 {
				t.Fatalf("validate exited %d:\n%s", code, out)
			}
		})
	}
	for _, field := range []string{"ec2_sd_configs", "azure_sd_configs", "gce_sd_configs", "consul_sd_configs"} {
		t.Run(field, func(t *testing.T) {
			out, code := e2e.Run(t, time.Minute, nil, "validate", "--config", e2e.WriteConfig(t, config("          "+field+": [{}]")))
			if code == 0 {
				t.Fatalf("validate accepted %s, which the build leaves out:\n%s", field, out)
			}
			if !strings.Contains(out, "field "+field+" not found") {
				t.Errorf("the error does not name %s:\n%s", field, out)
			}
		})
	}
}
