// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// Every described variant has a config whose files exist, and every config is
// described.
func TestVariantConfigsExist(t *testing.T) {
	for v := range variantInfo {
		if isFloor(v) {
			continue
		}
		args, err := variantConfig(v)
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		for i, a := range args {
			if a == "--config" {
				if _, err := os.Stat(args[i+1]); err != nil {
					t.Errorf("%s: %v", v, err)
				}
			}
		}
	}
	for v := range variantOverlays {
		if variantInfo[v] == "" {
			t.Errorf("%s has a config but no line in variantInfo", v)
		}
	}
}

// variantWitness is, per variant, what its overlays change in the merged
// config as the built collector resolves it (path in the config, its value).
var variantWitness = map[string][][2]string{
	"gateway":                {{"exporters::otlp_http_wire/default::sending_queue::storage", "queue_storage"}},
	"gateway-otlp":           {{"receivers::otlp::protocols::http::max_request_body_size", "8388608"}, {"receivers::otlp_http_pooled::endpoint", "127.0.0.1:0"}},
	"gateway-memory":         {{"exporters::otlp_http_wire/default::sending_queue::storage", "<nil>"}},
	"gateway-file":           {{"exporters::otlp_http_wire/default::sending_queue::storage", "file_storage/bench"}, {"extensions::file_storage/bench::compaction::on_rebound", "true"}},
	"gateway-file-nocompact": {{"exporters::otlp_http_wire/default::sending_queue::storage", "file_storage/bench"}, {"extensions::file_storage/bench::compaction::on_rebound", "<nil>"}}, // print-config leaves a false on_rebound out
	"gateway-file-eager":     {{"extensions::file_storage/bench::compaction::rebound_trigger_threshold_mib", "4"}, {"extensions::file_storage/bench::compaction::on_rebound", "true"}},
	"gateway-queue":          {{"exporters::otlp_http_wire/default::sending_queue::storage", "queue_storage/bench"}, {"extensions::queue_storage/bench::fsync", "false"}},
	"gateway-queue-fsync":    {{"exporters::otlp_http_wire/default::sending_queue::storage", "queue_storage/bench"}, {"extensions::queue_storage/bench::fsync", "true"}},
	"gateway-cache32m":       {{"extensions::queue_storage::memory_cache_size", "33554432"}, {"extensions::queue_storage::memory_cache_percentage", "0"}},
	"gateway-cache128":       {{"extensions::queue_storage::memory_cache_size", "134217728"}, {"extensions::queue_storage::memory_cache_percentage", "0"}},
	"gateway-cache1g":        {{"extensions::queue_storage::memory_cache_size", "1073741824"}, {"extensions::queue_storage::memory_cache_percentage", "0"}},
	"gateway-gc200":          {{"extensions::gomemlimit::gc_percent", "200"}},
	"gateway-gc300":          {{"extensions::gomemlimit::gc_percent", "300"}},
	"gateway-gzip1":          {{"exporters::otlp_http_wire/default::compression_params::level", "1"}},
	"gateway-zstd":           {{"exporters::otlp_http_wire/default::compression", "zstd"}},
	"gateway-groupbyattrs":   {{"service::pipelines::logs::processors", "[memory_limiter groupbyattrs/pod k8s_attributes/logs]"}},
	"gateway-filter":         {{"service::pipelines::logs::processors", "[memory_limiter attributes_to_resource/pod k8s_attributes/logs filter/noise]"}},
	"gateway-vendor":         {{"service::pipelines::logs::exporters", "[otlp_http_wire/default otlp_http_wire/vendor]"}, {"service::pipelines::metrics::exporters", "[otlp_http_wire/default]"}},
	"gateway-backends4":      {{"service::pipelines::logs::exporters", "[otlp_http_wire/default otlp_http_wire/vendor otlp_http_wire/vendor-b otlp_http_wire/vendor-c]"}},
	"gateway-redaction":      {{"service::pipelines::logs::exporters", "[otlp_http_wire/default forward/logs]"}, {"service::pipelines::logs/backend-vendor::processors", "[transform/mask redaction/vendor]"}},
	"gateway-routed":         {{"service::pipelines::logs/backend-team-a::processors", "[filter/route-team-a]"}, {"service::pipelines::logs/backend-team-b::processors", "[filter/route-team-b]"}, {"processors::filter/route-team-b::logs::resource", `[not (resource.attributes["k8s.namespace.name"] == "frontend")]`}},
	"gateway-pipeline":       {{"service::pipelines::logs::processors", "[memory_limiter attributes_to_resource/pod k8s_attributes/logs filter/noise]"}, {"service::pipelines::logs/backend-team-a::processors", "[filter/route-team-a]"}, {"service::pipelines::logs/backend-team-b::processors", "[filter/route-team-b transform/mask redaction/vendor]"}},
	"upstream":               {{"exporters::otlp_http/default::sending_queue::storage", "<nil>"}},
	"upstream-file":          {{"exporters::otlp_http/default::sending_queue::storage", "file_storage"}},
}

// The built collector accepts every variant's files as merged (print-config
// validates them, the safety converter included) and the merge changes what the
// overlays' names say. Needs the binary (OTELCOL_RELAY_BIN).
func TestVariantConfigsResolve(t *testing.T) {
	bin := os.Getenv(e2e.BinaryEnv)
	if bin == "" {
		t.Skipf("%s is not set", e2e.BinaryEnv)
	}
	gw := e2e.NewGateway(t, e2e.GatewayOptions{
		BackendURL: "https://127.0.0.1:1", Backend: e2e.NewBackendTLS(t, "default"), Receiver: e2e.NewReceiverTLS(t),
	})
	for v := range variantOverlays {
		t.Run(v, func(t *testing.T) {
			args, err := variantConfig(v)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, append([]string{"print-config", "--mode", "unredacted"}, args...)...)
			cmd.Env = append(os.Environ(), gw.Env...)
			for _, b := range backendsOf(v) {
				cmd.Env = append(cmd.Env, backendEnv(b.name, "https://127.0.0.1:1", e2e.NewBackendTLS(t, b.name))...)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s print-config %v: %v\n%s", bin, args, err, stderr.String())
			}
			var cfg map[string]any
			if err := yaml.Unmarshal(out, &cfg); err != nil {
				t.Fatal(err)
			}
			witness := variantWitness[v]
			if len(witness) == 0 {
				t.Fatalf("no witness in variantWitness")
			}
			for _, w := range witness {
				if got := fmt.Sprint(configAt(cfg, w[0])); got != w[1] {
					t.Errorf("%s = %s, want %s", w[0], got, w[1])
				}
			}
		})
	}
}

// configAt is the value at a "::" path in a config map, nil when absent; a
// whole number as an integer (the YAML is read through JSON).
func configAt(cfg map[string]any, path string) any {
	var v any = cfg
	for _, k := range strings.Split(path, "::") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	if f, ok := v.(float64); ok && f == math.Trunc(f) {
		return int64(f)
	}
	return v
}

// Run suffixes change how a variant runs and leave its config to the base name,
// in any combination.
func TestRunSuffixes(t *testing.T) {
	for _, c := range []struct {
		v, base    string
		env, flags int
		alt        bool
	}{
		{"gateway", "gateway", 0, 0, false},
		{"gateway-madvfree", "gateway", 1, 0, false},
		{"gateway-memory-protopool", "gateway-memory", 0, 1, false},
		{"gateway-alt", "gateway", 0, 0, true},
		{"gateway-memory-madvfree-alt", "gateway-memory", 1, 0, true},
		{"gateway-memory-512mi", "gateway-memory", 0, 0, false},
	} {
		base, _ := splitVariant(c.v)
		if base != c.base || len(variantEnv(c.v)) != c.env || len(variantFlags(c.v)) != c.flags || runsAlt(c.v) != c.alt {
			t.Errorf("%s: base %q env %q flags %q alt %v", c.v, base, variantEnv(c.v), variantFlags(c.v), runsAlt(c.v))
		}
		if want := int64(0); strings.HasSuffix(c.v, "-512mi") != (variantMemLimit(c.v) > want) {
			t.Errorf("%s: memory limit %d", c.v, variantMemLimit(c.v))
		}
	}
}

// Every run suffix is described, in any order and combination.
func TestDescribeSuffixedVariants(t *testing.T) {
	for v, want := range map[string][]string{
		"gateway-memory-512mi":   {variantInfo["gateway-memory"], "512 MiB memory cgroup"},
		"gateway-512mi-madvfree": {variantInfo["gateway"], "512 MiB memory cgroup", "GODEBUG=madvdontneed=0"},
		"gateway-madvfree-alt":   {variantInfo["gateway-madvfree"], "run on another build"},
	} {
		d := describeVariant(v)
		for _, w := range want {
			if !strings.Contains(d, w) {
				t.Errorf("%s: %q lacks %q", v, d, w)
			}
		}
	}
}
