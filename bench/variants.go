// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// variantInfo says what each collector variant runs. Variants other than
// gateway and upstream are the shipped files with a few lines replaced, so
// they differ from them in the queue's storage only.
var variantInfo = map[string]string{
	"floor":                    "in process, no network: gunzip + pdata unmarshal + marshal + gzip (the standard library's, default level: measuring.md's floor) of the same 1,000-record requests, three passes",
	"floor-klauspost":          "the floor with klauspost/compress's gzip (the library otlp_http_wire compresses with) instead of the standard library's, at its default level; gunzip stays the standard library's, as in confighttp's receiver",
	"floor-parallel":           "the floor on as many goroutines as the machine has CPUs (GOMAXPROCS), each on its own share of the requests: the floor under the same contention between CPUs as a collector that uses them all (on a machine whose vCPUs share a core, a CPU-second does less work when both run)",
	"gateway":                  "`config/gateway.yaml` + `config/receiver-tls.yaml` as shipped: OTLP/HTTP into otlp_http_pooled, memory_limiter, attributes_to_resource, k8s_attributes, no batch processor, otlp_http_wire with its persistent queue on queue_storage and exporter-side batching (2,000 items), certwatch",
	"gateway-otlp":             "the shipped gateway with its OTLP/HTTP intake back on upstream's `otlp` receiver (the same settings under `otlp::protocols::http`) instead of `otlp_http_pooled` (components/otlphttppooledreceiver): a new, zeroed body buffer per request",
	"gateway-memory":           "the same gateway with the `storage:` line removed: an in-memory sending queue (the price of durability)",
	"gateway-file":             "the same gateway on `file_storage` (bbolt), as shipped before queue_storage",
	"gateway-file-nocompact":   "gateway-file with file_storage's compaction off (`on_start` and `on_rebound` false, upstream's default): no rebound check every 5 s, no copy of the database when a backlog drains",
	"gateway-file-eager":       "gateway-file with online compaction as soon as a backlog drains (`rebound_needed_threshold_mib: 16`, `rebound_trigger_threshold_mib: 4`, `check_interval: 1s`; defaults 100, 10, 5s): a small bbolt file and freelist at the price of more copies",
	"gateway-queue":            "the same gateway on a `queue_storage` of its own (components/queuestorageextension), fsync off",
	"gateway-queue-fsync":      "the same gateway on `queue_storage` with `fsync: true` (survives a node crash)",
	"gateway-durable":          "the same gateway with the exporter's sending_queue disabled and a `durable_queue` processor (components/durablequeueprocessor) on `queue_storage` ending each pipeline (`e2e.DurableQueueConfig`): persisted once, forwarded from memory",
	"gateway-durable-gc":       "gateway-durable with `gomemlimit: {gc_percent: 300}`: a higher GC target, the memory limit as the backstop",
	"gateway-durable-fsync":    "gateway-durable with `fsync: true` on its queue_storage (survives a node crash)",
	"upstream":                 "`bench/upstream-defaults.yaml`: same receivers, TLS and processors, plus `batch: {}` (8,192 items / 200 ms), otlp_http with the default in-memory queue and gzip",
	"upstream-file":            "upstream defaults plus a persistent queue on `file_storage` with its defaults: the durable peer a user would build from upstream",
	"gateway-otlphttp":         "the same gateway with upstream's `otlp_http` exporter instead of `otlp_http_wire`, on the same queue_storage: the queue encodes, decodes on read back and the exporter encodes again (shipped until session 4, on file_storage)",
	"gateway-otlphttp-memory":  "gateway-otlphttp with an in-memory sending queue: the in-memory gateway that issue 15's ratios were first measured against",
	"gateway-cache32m":         "the shipped gateway with `memory_cache_size: 33554432` on its queue_storage instead of `memory_cache_percentage: 6`: the cache as it was before session 8, 32 MiB whatever the memory limit",
	"gateway-cache128":         "the shipped gateway with `memory_cache_size: 134217728` on its queue_storage instead of `memory_cache_percentage: 6`: a backlog up to 128 MiB is read back from memory, as an in-memory queue would hold it",
	"gateway-cache1g":          "the shipped gateway with `memory_cache_size: 1073741824` on its queue_storage instead of `memory_cache_percentage: 6`: the saturation phase's whole backlog stays in memory, as it does in gateway-memory, and is still written to disk",
	"gateway-gc200":            "the shipped gateway with `gomemlimit: {gc_percent: 200}`: half as many GC cycles (each one also lets the runtime return memory to the kernel, which the next large request faults back in), the memory limit as the backstop",
	"gateway-gc300":            "the shipped gateway with `gomemlimit: {gc_percent: 300}`: a quarter as many GC cycles as the default 100, the memory limit as the backstop",
	"gateway-madvfree":         "the shipped gateway run with `GODEBUG=madvdontneed=0`: the Go runtime returns memory with MADV_FREE, so a page it gives back and touches again is not faulted in anew unless the kernel needed it meanwhile",
	"gateway-memory-madvfree":  "gateway-memory run with `GODEBUG=madvdontneed=0`",
	"gateway-protopool":        "the shipped gateway run with `--feature-gates=pdata.useProtoPooling` (alpha): pdata takes its objects from pools and the pipeline's reference counting hands them back when the data has left it",
	"gateway-memory-protopool": "gateway-memory with `--feature-gates=pdata.useProtoPooling`",
	"gateway-gzip1":            "the shipped gateway with `compression_params: {level: 1}` (gzip's fastest level instead of its default 6)",
	"gateway-groupbyattrs":     "the shipped gateway with upstream's `groupbyattrs/pod` (same keys) back instead of `attributes_to_resource/pod` (components/attributestoresourceprocessor): it copies every record and builds a resource per record",
}

// runSuffix changes how a variant runs, not its config: "<variant><suffix>"
// runs <variant>'s config with the suffix's environment and flags, or on the
// -alt-bin build for -alt. Suffixes combine ("gateway-madvfree-alt").
type runSuffix struct {
	suffix string
	env    []string // added to the collector's environment
	flags  []string // added after the --config arguments
	alt    bool     // runs on -alt-bin
	// memLimit runs the collector in a memory cgroup of this many bytes, as
	// in a pod with resources.limits.memory: gomemlimit and memory_limiter
	// then size themselves from it instead of from the machine's memory.
	memLimit int64
	// about is what the report adds to the variant's own line.
	about func() string
}

var runSuffixes = []runSuffix{
	{suffix: "-alt", alt: true, about: func() string { return fmt.Sprintf("run on another build, `%s`", *altBin) }},
	{suffix: "-madvfree", env: []string{"GODEBUG=madvdontneed=0"}, about: func() string { return "run with `GODEBUG=madvdontneed=0`" }},
	{suffix: "-protopool", flags: []string{"--feature-gates=pdata.useProtoPooling"}, about: func() string { return "run with `--feature-gates=pdata.useProtoPooling`" }},
	// deploy/base/statefulset.yaml's limits.memory.
	{suffix: "-512mi", memLimit: 512 << 20, about: func() string {
		return "run in a 512 MiB memory cgroup (the StatefulSet's limits.memory), so gomemlimit and memory_limiter size themselves from it"
	}},
}

// splitVariant peels the run suffixes off v: the variant whose config it runs,
// and the suffixes it runs with.
func splitVariant(v string) (base string, with []runSuffix) {
	for peeled := true; peeled; {
		peeled = false
		for _, rs := range runSuffixes {
			if b, ok := strings.CutSuffix(v, rs.suffix); ok {
				v, peeled, with = b, true, append(with, rs)
			}
		}
	}
	return v, with
}

// variantEnv is what a variant adds to the collector's environment.
func variantEnv(v string) []string {
	_, with := splitVariant(v)
	var env []string
	for _, rs := range with {
		env = append(env, rs.env...)
	}
	return env
}

// variantFlags are the command-line flags a variant adds after its --config
// arguments.
func variantFlags(v string) []string {
	_, with := splitVariant(v)
	var flags []string
	for _, rs := range with {
		flags = append(flags, rs.flags...)
	}
	return flags
}

// runsAlt says whether v runs on the -alt-bin build.
func runsAlt(v string) bool {
	_, with := splitVariant(v)
	return slices.ContainsFunc(with, func(rs runSuffix) bool { return rs.alt })
}

// variantMemLimit is the memory cgroup limit v runs in, 0 for none.
func variantMemLimit(v string) int64 {
	_, with := splitVariant(v)
	var limit int64
	for _, rs := range with {
		limit = max(limit, rs.memLimit)
	}
	return limit
}

// isFloor says whether v is measured in process rather than as a collector.
func isFloor(v string) bool { return v == "floor" || v == "floor-klauspost" || v == "floor-parallel" }

// describeVariant is variantInfo's line for v or, for a name it does not
// list, its base variant's line and what each run suffix changes.
func describeVariant(v string) string {
	if d, ok := variantInfo[v]; ok {
		return d
	}
	for _, rs := range runSuffixes {
		if base, ok := strings.CutSuffix(v, rs.suffix); ok {
			return describeVariant(base) + "; " + rs.about()
		}
	}
	return ""
}

// variantBinary is the build a variant runs: -alt-bin for an -alt variant,
// the shared binary otherwise.
func variantBinary(v string) string {
	if runsAlt(v) {
		return *altBin
	}
	return ""
}

// variantConfig writes the config of variant into dir and returns the
// --config arguments, receiver TLS included.
func variantConfig(variant, dir string) ([]string, error) {
	root := e2e.RepoRoot()
	tls := filepath.Join(root, "config", "receiver-tls.yaml")
	gw, err := os.ReadFile(filepath.Join(root, "config", "gateway.yaml"))
	if err != nil {
		return nil, err
	}
	up, err := os.ReadFile(filepath.Join(root, "bench", "upstream-defaults.yaml"))
	if err != nil {
		return nil, err
	}
	storageLine := "      storage: file_storage\n"
	if strings.Contains(string(gw), "      storage: queue_storage\n") {
		storageLine = "      storage: queue_storage\n"
	}
	var text string
	var edits [][2]string
	variant, _ = splitVariant(variant)
	switch variant {
	case "gateway":
		return []string{"--config", filepath.Join(root, "config", "gateway.yaml"), "--config", tls}, nil
	case "upstream":
		return []string{"--config", filepath.Join(root, "bench", "upstream-defaults.yaml"), "--config", tls}, nil
	case "gateway-memory":
		text, edits = string(gw), [][2]string{{storageLine, ""}}
	case "gateway-file", "gateway-file-nocompact", "gateway-file-eager", "gateway-queue", "gateway-queue-fsync":
		name := "file_storage"
		ext := "  file_storage/bench:\n    directory: ${env:RELAY_QUEUE_DIR}\n    create_directory: true\n    timeout: 2s\n"
		switch variant {
		case "gateway-file":
			ext += "    compaction:\n      directory: ${env:RELAY_QUEUE_DIR}\n      on_start: true\n      on_rebound: true\n"
		case "gateway-file-nocompact":
			ext += "    compaction:\n      on_start: false\n      on_rebound: false\n"
		case "gateway-file-eager":
			ext += "    compaction:\n      directory: ${env:RELAY_QUEUE_DIR}\n      on_start: true\n      on_rebound: true\n" +
				"      rebound_needed_threshold_mib: 16\n      rebound_trigger_threshold_mib: 4\n      check_interval: 1s\n"
		}
		if !strings.HasPrefix(variant, "gateway-file") {
			name = "queue_storage"
			ext = "  queue_storage/bench:\n    directory: ${env:RELAY_QUEUE_DIR}\n"
			if variant == "gateway-queue-fsync" {
				ext += "    fsync: true\n"
			}
		}
		text, edits = string(gw), [][2]string{
			{storageLine, "      storage: " + name + "/bench\n"},
			{"\nextensions:\n", "\nextensions:\n" + ext},
			{"  extensions: [", "  extensions: [" + name + "/bench, "},
		}
	case "gateway-durable", "gateway-durable-gc", "gateway-durable-fsync":
		if text, err = e2e.DurableQueueYAML(); err != nil {
			return nil, err
		}
		switch variant {
		case "gateway-durable-gc":
			edits = [][2]string{{"    limit_percentage: 80\n  # At most", "    limit_percentage: 80\n    gc_percent: 300\n  # At most"}}
		case "gateway-durable-fsync":
			edits = [][2]string{{"    directory: ${env:RELAY_QUEUE_DIR}/durable\n", "    directory: ${env:RELAY_QUEUE_DIR}/durable\n    fsync: true\n"}}
		}
	case "gateway-otlphttp", "gateway-otlphttp-memory":
		text, edits = strings.ReplaceAll(string(gw), "otlp_http_wire/default", "otlp_http/default"), nil
		if variant == "gateway-otlphttp-memory" {
			edits = [][2]string{{storageLine, ""}}
		}
	case "gateway-cache32m", "gateway-cache128", "gateway-cache1g":
		size := map[string]string{"gateway-cache32m": "33554432", "gateway-cache128": "134217728", "gateway-cache1g": "1073741824"}[variant]
		text, edits = string(gw), [][2]string{{"    memory_cache_percentage: 6\n", "    memory_cache_size: " + size + "\n"}}
	case "gateway-gc200", "gateway-gc300":
		pct := strings.TrimPrefix(variant, "gateway-gc")
		text, edits = string(gw), [][2]string{{"    limit_percentage: 80\n  # At most", "    limit_percentage: 80\n    gc_percent: " + pct + "\n  # At most"}}
	case "gateway-gzip1":
		text, edits = string(gw), [][2]string{{"    compression: ${env:OTEL_EXPORTER_DEFAULT_COMPRESSION:-gzip}\n", "    compression: ${env:OTEL_EXPORTER_DEFAULT_COMPRESSION:-gzip}\n    compression_params:\n      level: 1\n"}}
	case "gateway-otlp":
		if text, err = upstreamHTTPIntake(string(gw)); err != nil {
			return nil, err
		}
	case "gateway-groupbyattrs":
		text, edits = string(gw), [][2]string{
			{"  attributes_to_resource/pod:\n", "  groupbyattrs/pod:\n"},
			{"[memory_limiter, attributes_to_resource/pod, k8s_attributes/logs]", "[memory_limiter, groupbyattrs/pod, k8s_attributes/logs]"},
		}
	case "upstream-file":
		text, edits = string(up), [][2]string{
			{"\nextensions:\n", "\nextensions:\n  file_storage:\n    directory: ${env:RELAY_QUEUE_DIR}\n    create_directory: true\n"},
			{"  extensions: [", "  extensions: [file_storage, "},
			{"      key_file: ${env:OTEL_EXPORTER_DEFAULT_KEY_FILE}\n", "      key_file: ${env:OTEL_EXPORTER_DEFAULT_KEY_FILE}\n    sending_queue:\n      storage: file_storage\n"},
		}
	default:
		return nil, fmt.Errorf("unknown variant %q", variant)
	}
	for _, e := range edits {
		if strings.Count(text, e[0]) != 1 {
			return nil, fmt.Errorf("variant %s: %q is not in the config exactly once", variant, e[0])
		}
		text = strings.Replace(text, e[0], e[1], 1)
	}
	p := filepath.Join(dir, variant+".yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		return nil, err
	}
	return []string{"--config", p, "--config", tls}, nil
}

// upstreamHTTPIntake moves the shipped gateway's otlp_http_pooled block, as it
// is, under otlp::protocols::http and takes otlp_http_pooled out of the
// pipelines: the swap back to upstream that gateway.yaml describes.
func upstreamHTTPIntake(gw string) (string, error) {
	const head, next, grpc = "  otlp_http_pooled:\n", "\nprocessors:\n", "  otlp:\n    protocols:\n      grpc:\n"
	start, end := strings.Index(gw, head), strings.Index(gw, next)
	if strings.Count(gw, head) != 1 || strings.Count(gw, next) != 1 || start > end || strings.Count(gw, grpc) != 1 {
		return "", fmt.Errorf("variant gateway-otlp: config/gateway.yaml no longer has one %q block before %q and one %q", head, next, grpc)
	}
	var http strings.Builder
	http.WriteString("      http:\n")
	for _, line := range strings.SplitAfter(gw[start+len(head):end+1], "\n") {
		if strings.TrimSpace(line) != "" {
			http.WriteString("    " + line)
		}
	}
	text := gw[:start] + gw[end:]
	text = strings.Replace(text, grpc, "  otlp:\n    protocols:\n"+http.String()+"      grpc:\n", 1)
	const pipelines = "      receivers: [otlp, otlp_http_pooled]\n"
	if n := strings.Count(text, pipelines); n != 3 {
		return "", fmt.Errorf("variant gateway-otlp: %q is in config/gateway.yaml %d times, want 3 (logs, metrics, traces)", pipelines, n)
	}
	return strings.ReplaceAll(text, pipelines, "      receivers: [otlp]\n"), nil
}
