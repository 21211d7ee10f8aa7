// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// variantInfo says what each collector variant runs. Variants other than
// gateway and upstream are the shipped files with the overlays of
// variantOverlays merged over them.
var variantInfo = map[string]string{
	"floor":                    "in process, no network: gunzip + pdata unmarshal + marshal + gzip (the standard library's, default level: measuring.md's floor) of the same 1,000-record requests, three passes",
	"floor-klauspost":          "the floor with klauspost/compress's gzip (the library otlp_http_wire compresses with) instead of the standard library's, at its default level; gunzip stays the standard library's, as in confighttp's receiver",
	"floor-parallel":           "the floor on as many goroutines as the machine has CPUs (GOMAXPROCS), each on its own share of the requests: the floor under the same contention between CPUs as a collector that uses them all (on a machine whose vCPUs share a core, a CPU-second does less work when both run)",
	"gateway":                  "`config/gateway.yaml` + `config/receiver-tls.yaml` as shipped: OTLP/HTTP into otlp_http_pooled, memory_limiter, attributes_to_resource, k8s_attributes, no batch processor, otlp_http_wire with its persistent queue on queue_storage and exporter-side batching (2,000 items), certwatch",
	"gateway-otlp":             "the shipped gateway with its OTLP/HTTP intake back on upstream's `otlp` receiver (the same settings under `otlp::protocols::http`) instead of `otlp_http_pooled` (components/otlphttppooledreceiver), which stays in the pipelines idle on a loopback port nothing sends to: a new, zeroed body buffer per request",
	"gateway-memory":           "the same gateway with the exporter's `storage` unset: an in-memory sending queue (the price of durability)",
	"gateway-file":             "the same gateway on `file_storage` (bbolt) in the queue directory, with the compaction shipped before queue_storage",
	"gateway-file-nocompact":   "gateway-file with file_storage's compaction off (`on_start` and `on_rebound` false, upstream's default): no rebound check every 5 s, no copy of the database when a backlog drains",
	"gateway-file-eager":       "gateway-file with online compaction as soon as a backlog drains (`rebound_needed_threshold_mib: 16`, `rebound_trigger_threshold_mib: 4`, `check_interval: 1s`; defaults 100, 10, 5s): a small bbolt file and freelist at the price of more copies",
	"gateway-queue":            "the same gateway on a `queue_storage` of its own (components/queuestorageextension) with the extension's defaults: fsync off, a fixed 32 MiB cache",
	"gateway-queue-fsync":      "gateway-queue with `fsync: true` (survives a node crash)",
	"upstream":                 "`bench/upstream-defaults.yaml`: same receivers, TLS and processors, plus `batch: {}` (8,192 items / 200 ms), otlp_http with the default in-memory queue and gzip",
	"upstream-file":            "upstream defaults plus a persistent queue on `file_storage` with its defaults: the durable peer a user would build from upstream",
	"gateway-cache32m":         "the shipped gateway with `memory_cache_size: 33554432` on its queue_storage instead of `memory_cache_percentage: 6`: the extension's default, 32 MiB whatever the memory limit",
	"gateway-cache128":         "the shipped gateway with `memory_cache_size: 134217728` on its queue_storage instead of `memory_cache_percentage: 6`: a backlog up to 128 MiB is read back from memory, as an in-memory queue would hold it",
	"gateway-cache1g":          "the shipped gateway with `memory_cache_size: 1073741824` on its queue_storage instead of `memory_cache_percentage: 6`: the saturation phase's whole backlog stays in memory, as it does in gateway-memory, and is still written to disk",
	"gateway-gc200":            "the shipped gateway with `gomemlimit: {gc_percent: 200}`: half as many GC cycles (each one also lets the runtime return memory to the kernel, which the next large request faults back in), the memory limit as the backstop",
	"gateway-gc300":            "the shipped gateway with `gomemlimit: {gc_percent: 300}`: a quarter as many GC cycles as the default 100, the memory limit as the backstop",
	"gateway-madvfree":         "the shipped gateway run with `GODEBUG=madvdontneed=0`: the Go runtime returns memory with MADV_FREE, so a page it gives back and touches again is not faulted in anew unless the kernel needed it meanwhile",
	"gateway-memory-madvfree":  "gateway-memory run with `GODEBUG=madvdontneed=0`",
	"gateway-protopool":        "the shipped gateway run with `--feature-gates=pdata.useProtoPooling` (alpha): pdata takes its objects from pools and the pipeline's reference counting hands them back when the data has left it",
	"gateway-memory-protopool": "gateway-memory with `--feature-gates=pdata.useProtoPooling`",
	"gateway-gzip1":            "the shipped gateway with `compression_params: {level: 1}` on its exporter (gzip's fastest level instead of its default 6)",
	"gateway-zstd":             "the shipped gateway with `compression: zstd` on its exporter (confighttp's zstd at its default level) instead of gzip, for a backend that accepts it",
	"gateway-groupbyattrs":     "the shipped gateway with upstream's `groupbyattrs/pod` (same keys) in the logs pipeline instead of `attributes_to_resource/pod` (components/attributestoresourceprocessor): it copies every record and builds a resource per record",
	"gateway-filter":           "the shipped gateway with `config/recipes/drop-noise.yaml`'s `filter/noise` after the logs pipeline's processors, its health-check match also on a map body's `log` key so that the regular expression runs on every record: the bench's records (INFO flow lines) are all kept, so this is what judging every record costs, not what dropping saves",
	"gateway-vendor":           "the shipped gateway plus a second backend (`backends:` entry vendor, OTLP/HTTP, mutual TLS, its own sink) that receives every record as it arrived, in the shared logs pipeline: the price of a second export of every record",
	"gateway-backends4":        "gateway-vendor plus two more such backends (vendor-b, vendor-c), four in all: each one's share of the cost per record",
	"gateway-redaction":        "gateway-vendor with `config/recipes/mask-for-vendor.yaml`'s `transform/mask` and `redaction/vendor` (body patterns also on a map body's `log` key; no record of the bench holds a match) on the vendor's backend entry: its own pipeline fed by `forward/logs`, its own copy of each request; over gateway-vendor, the price of masking every record",
	"gateway-routed":           "the shipped gateway plus two backends routed by namespace (`route: {namespaces: [payments]}` to team-a, `[frontend]` to team-b), each in its own pipeline fed by `forward/logs` behind its `filter/route-<name>`, each on its own sink; the bench's records come from one namespace, so the load alternates its requests between payments and frontend (-namespaces): every record goes to the default backend and to one routed backend",
	"gateway-pipeline":         "the typical one: gateway-filter's `filter/noise` in the shared logs pipeline, gateway-routed's two backends, and team-b's pipeline masking with gateway-redaction's `transform/mask` and `redaction/vendor` after its route (half the records, those from frontend, are masked)",
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
	// perRequest is the records of each saturation request (0: 1,000), and
	// bodyBytes the length of each record's log line (0: the fixture's, about
	// 620 bytes of a 1 KB record): the load's shape, for the cost curves.
	perRequest, bodyBytes int
	// about is what the report adds to the variant's own line.
	about func() string
}

var runSuffixes = []runSuffix{
	{suffix: "-alt", alt: true, about: func() string { return fmt.Sprintf("run on another build, %#q", *altBin) }},
	{suffix: "-madvfree", env: []string{"GODEBUG=madvdontneed=0"}, about: func() string { return "run with `GODEBUG=madvdontneed=0`" }},
	{suffix: "-protopool", flags: []string{"--feature-gates=pdata.useProtoPooling"}, about: func() string { return "run with `--feature-gates=pdata.useProtoPooling`" }},
	// The cost curves: CPU per record against request size and record size.
	{suffix: "-req10", perRequest: 10, about: func() string { return "saturation requests of 10 records" }},
	{suffix: "-req100", perRequest: 100, about: func() string { return "saturation requests of 100 records" }},
	{suffix: "-body200", bodyBytes: 200, about: func() string { return "each record's log line 200 bytes" }},
	{suffix: "-body4k", bodyBytes: 4 << 10, about: func() string { return "each record's log line 4 KiB" }},
	{suffix: "-body16k", bodyBytes: 16 << 10, about: func() string { return "each record's log line 16 KiB" }},
	// deploy/base/statefulset.yaml's limits.memory.
	{suffix: "-512mi", memLimit: 512 << 20, about: func() string {
		return "run in a 512 MiB memory cgroup (the StatefulSet's limits.memory), so gomemlimit and memory_limiter size themselves from it"
	}},
}

// splitVariant peels the run suffixes off v: the variant whose config it runs,
// and the suffixes it runs with.
func splitVariant(v string) (base string, with []runSuffix) { return peel(v, runSuffixes) }

// peel cuts any of suffixes off the end of v until none is left there, and
// returns what remains and the suffixes cut, in the order they were.
func peel(v string, suffixes []runSuffix) (rest string, cut []runSuffix) {
	for peeled := true; peeled; {
		peeled = false
		for _, rs := range suffixes {
			if b, ok := strings.CutSuffix(v, rs.suffix); ok {
				v, peeled, cut = b, true, append(cut, rs)
			}
		}
	}
	return v, cut
}

// variantEnv is what a variant adds to the collector's environment.
func variantEnv(v string) []string {
	return suffixValues(v, func(rs runSuffix) []string { return rs.env })
}

// variantFlags are the command-line flags a variant adds after its --config
// arguments.
func variantFlags(v string) []string {
	return suffixValues(v, func(rs runSuffix) []string { return rs.flags })
}

// suffixValues joins one list of each of v's run suffixes, in the order
// splitVariant peels them.
func suffixValues(v string, list func(runSuffix) []string) []string {
	_, with := splitVariant(v)
	var all []string
	for _, rs := range with {
		all = append(all, list(rs)...)
	}
	return all
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
func isFloor(v string) bool {
	base, _ := splitVariant(v)
	return base == "floor" || base == "floor-klauspost" || base == "floor-parallel"
}

// shapeOf is the load v runs with: its run suffixes' request and record sizes.
func shapeOf(v string) loadShape {
	var sh loadShape
	_, with := splitVariant(v)
	for _, rs := range with {
		sh.perRequest = max(sh.perRequest, rs.perRequest)
		sh.bodyBytes = max(sh.bodyBytes, rs.bodyBytes)
	}
	return sh
}

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

// mergeAppend is the flag every gateway run with a second file needs
// (config/gateway.yaml says so): it appends the lists under service:: instead
// of replacing them, and the safety converter refuses the merge without it.
const mergeAppend = "--feature-gates=confmap.enableMergeAppendOption"

// variantOverlays are the files in bench/variants/ that a variant merges, in
// this order, over its base: bench/upstream-defaults.yaml for upstream-*,
// config/gateway.yaml for the others. Each file is named for what it changes.
var variantOverlays = map[string][]string{
	"gateway":                {},
	"gateway-otlp":           {"otlp-http-intake.yaml"},
	"gateway-memory":         {"queue-in-memory.yaml"},
	"gateway-file":           {"queue-on-file-storage.yaml"},
	"gateway-file-nocompact": {"queue-on-file-storage.yaml", "file-storage-no-compaction.yaml"},
	"gateway-file-eager":     {"queue-on-file-storage.yaml", "file-storage-eager-compaction.yaml"},
	"gateway-queue":          {"queue-on-own-queue-storage.yaml"},
	"gateway-queue-fsync":    {"queue-on-own-queue-storage.yaml", "own-queue-storage-fsync.yaml"},
	"gateway-cache32m":       {"queue-cache-32mib.yaml"},
	"gateway-cache128":       {"queue-cache-128mib.yaml"},
	"gateway-cache1g":        {"queue-cache-1gib.yaml"},
	"gateway-gc200":          {"gc-percent-200.yaml"},
	"gateway-gc300":          {"gc-percent-300.yaml"},
	"gateway-gzip1":          {"gzip-level-1.yaml"},
	"gateway-zstd":           {"zstd.yaml"},
	"gateway-groupbyattrs":   {"groupbyattrs.yaml"},
	"gateway-filter":         {"noise-filter.yaml"},
	"gateway-vendor":         {"vendor-backend.yaml"},
	"gateway-backends4":      {"three-more-backends.yaml"},
	"gateway-redaction":      {"masking-processors.yaml", "vendor-backend-masked.yaml"},
	"gateway-routed":         {"namespace-routed-backends.yaml"},
	"gateway-pipeline":       {"noise-filter.yaml", "masking-processors.yaml", "namespace-routed-backends-masked.yaml"},
	"upstream":               {},
	"upstream-file":          {"upstream-queue-on-file-storage.yaml"},
}

// benchBackend is a backend a variant's overlays add beside the default one
// (a `backends:` entry): the bench gives it a sink and a TLS identity of its
// own, through the environment variables its entry reads (backendEnv).
type benchBackend struct {
	name string
	// namespaces are those whose records it must receive (its route); none:
	// every record.
	namespaces []string
}

// variantBackends are the backends each variant adds; every record must reach
// the default backend and each of these its route selects, no more.
var variantBackends = map[string][]benchBackend{
	"gateway-vendor":    {{name: "vendor"}},
	"gateway-backends4": {{name: "vendor"}, {name: "vendor-b"}, {name: "vendor-c"}},
	"gateway-redaction": {{name: "vendor"}},
	"gateway-routed":    {{name: "team-a", namespaces: []string{"payments"}}, {name: "team-b", namespaces: []string{"frontend"}}},
	"gateway-pipeline":  {{name: "team-a", namespaces: []string{"payments"}}, {name: "team-b", namespaces: []string{"frontend"}}},
}

// backendsOf are the backends variant adds, run suffixes peeled.
func backendsOf(variant string) []benchBackend {
	base, _ := splitVariant(variant)
	return variantBackends[base]
}

// wants says whether the backend must receive a record from namespace ns.
func (b benchBackend) wants(ns string) bool {
	return len(b.namespaces) == 0 || slices.Contains(b.namespaces, ns)
}

// backendEnv is the environment a backend's entry in bench/variants/ reads:
// its endpoint and TLS files (RELAY_BENCH_<NAME>_*) and its Authorization
// header (OTEL_EXPORTER_<NAME>_AUTHORIZATION, the backends list's convention).
func backendEnv(name, endpoint string, tls *e2e.BackendTLS) []string {
	n := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	return []string{
		"RELAY_BENCH_" + n + "_ENDPOINT=" + endpoint,
		"RELAY_BENCH_" + n + "_CA_FILE=" + tls.CAFile,
		"RELAY_BENCH_" + n + "_CERT_FILE=" + tls.CertFile,
		"RELAY_BENCH_" + n + "_KEY_FILE=" + tls.KeyFile,
		"OTEL_EXPORTER_" + n + "_AUTHORIZATION=Bearer bench-" + name,
	}
}

// loadNamespaces are the namespaces the bench's requests alternate between:
// -namespaces, or else those the routes of the variants in -variants select
// (payments, FluentBitLogs' own, when none routes), so that every routed
// backend gets its share of the same load every variant of the run gets.
func loadNamespaces() []string {
	if *namespaceList != "" {
		return strings.Split(*namespaceList, ",")
	}
	ns := []string{"payments"}
	for _, v := range strings.Split(*variantList, ",") {
		for _, b := range backendsOf(v) {
			for _, n := range b.namespaces {
				if !slices.Contains(ns, n) {
					ns = append(ns, n)
				}
			}
		}
	}
	return ns
}

// variantConfig returns the --config arguments of variant (receiver TLS
// included) and the feature gate its merge needs.
func variantConfig(variant string) ([]string, error) {
	root := e2e.RepoRoot()
	variant, _ = splitVariant(variant)
	overlays, ok := variantOverlays[variant]
	if !ok {
		return nil, fmt.Errorf("unknown variant %q", variant)
	}
	base := filepath.Join(root, "config", "gateway.yaml")
	if strings.HasPrefix(variant, "upstream") {
		base = filepath.Join(root, "bench", "upstream-defaults.yaml")
	}
	args := []string{"--config", base, "--config", filepath.Join(root, "config", "receiver-tls.yaml")}
	for _, o := range overlays {
		args = append(args, "--config", filepath.Join(root, "bench", "variants", o))
	}
	if len(overlays) > 0 {
		args = append(args, mergeAppend)
	}
	return args, nil
}
