#!/usr/bin/env bash
# The test suites, alone or all of them (make test). Each suite is a package with a
# build tag of its own, so `go test ./...` is the unit tests and nothing else:
#
#   unit         go test ./...                    no binary, no peer
#   deploy       test/deploy, tag deploy          the binary, kubectl and promtool (Debian), helm
#   reliability  test/reliability, tag reliability the binary, root for memory cgroups
#   e2e          test/e2e, tag e2e                the binary, etcd and kube-apiserver
#   cluster      test/cluster, tag cluster        every peer of hack/kube-peers.sh cluster, root
#   image        test/image, tag image            make test-image: the image for every
#                                                 platform (podman), skopeo, the registry
#
# `all` runs them in two lanes side by side, because most of a suite's time is spent
# waiting on servers and a cluster, which leaves a core idle: lane 1 is unit,
# reliability, e2e and image; lane 2 is deploy and then cluster. On a cold machine the
# Kubernetes peers build in the background at the lowest priority, e2e starts once
# etcd and kube-apiserver are in bin/ and cluster once every peer is. A suite that
# fails stops nothing else; the script exits non-zero if any failed and prints each
# suite's minutes at the end.
#
# Usage: hack/test.sh [all|unit|deploy|reliability|e2e|cluster|image]...
# Environment: GO, RELAY (the binary), BUILDTAGS, TEST_TIMEOUT, RUN (a -run regexp), TEST_FLAGS
# (more go test flags for every suite, e.g. -v), and <SUITE>_FLAGS for one suite only
# (UNIT_FLAGS=-race, CLUSTER_FLAGS=-shuffle=on: what CI sets). COMPILE_GOGC applies
# to go test's compiler and linker only (gotest says why). The suites find the
# tools of hack/tools.sh by absolute path in HELM (deploy, cluster, image),
# REGISTRY_BIN and COSIGN_BIN (cluster), which this builds and exports (start_tools).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
RELAY=${RELAY:-$PWD/bin/otelcol-relay}
# The Makefile's BUILDTAGS and its compile configuration (cgo off, -trimpath), so
# the suites reuse what `make build` and `make lint` compiled.
tags=${BUILDTAGS:-remove_all_sd,enable_kubernetes_sd,enable_dns_sd}
export CGO_ENABLED=${CGO_ENABLED:-0}
case " ${GOFLAGS:-} " in *" -trimpath "*) ;; *) export GOFLAGS="-trimpath -gcflags=all=-dwarf=false ${GOFLAGS:-}" ;; esac
TEST_TIMEOUT=${TEST_TIMEOUT:-60m}
read -r -a test_flags <<<"${TEST_FLAGS:-}"
[ -n "${RUN:-}" ] && test_flags+=(-run "$RUN")
log=bin/kube-peers.log
mkdir -p bin
rm -rf bin/test-durations && mkdir bin/test-durations
"$GO" build -o bin/testsum ./hack/testsum

e2e_peers=(etcd kube-apiserver)
cluster_peers=(etcd kube-apiserver kubelet kube-proxy kube-scheduler kube-controller-manager kubectl
	containerd containerd-shim-runc-v2 ctr coredns metrics-server local-path-provisioner kube-router
	cert-manager-controller trust-manager)

# The background builds, each a job of its own (set -m) so that its go builds stop
# as one group when this exits.
peers= tools=
stop_builds() {
	local j
	for j in $peers $tools; do kill -- -"$j" 2>/dev/null || true; done
}
trap stop_builds EXIT

# start_peers: build what is missing of the cluster's peers in the background, once.
start_peers() {
	local f
	[ -n "$peers" ] && return
	for f in "${cluster_peers[@]}"; do
		if [ ! -x "bin/$f" ]; then
			set -m
			hack/kube-peers.sh cluster >"$log" 2>&1 &
			peers=$!
			set +m
			return
		fi
	done
}

# start_tools NAME...: build (or find cached) the tools the suites run besides the
# peers, in the background, once, one after another in the order given: helm, which
# test/deploy and test/cluster run on the chart (and make release packages it
# with, in test/image and test/cluster), the reference registry test/cluster's
# releases are pushed to and pulled from, and cosign, which signs and verifies
# them. They are on the cluster suite's path as the peers are, so they build beside
# the peers and at nice 0, not after them: at nice 10 behind the peers and the
# suites, a cold CI run started test/cluster 8 minutes after its peers were done.
# helm goes first: test/deploy, the first suite of its lane, waits for it alone.
# Each path goes to bin/.NAME-bin as soon as that tool is built; one that fails
# does not stop the others.
start_tools() {
	[ -n "$tools" ] && return
	local t
	for t in "$@"; do rm -f "bin/.$t-bin"; done
	set -m
	(
		rc=0
		for t in "$@"; do
			TOOLS_NICE=0 GO=$GO ./hack/tools.sh "$t" >"bin/.$t-bin.tmp" && mv "bin/.$t-bin.tmp" "bin/.$t-bin" || rc=1
		done
		exit "$rc"
	) >bin/tools.log 2>&1 &
	tools=$!
	set +m
}

# The variable each tool's path is exported in, as the suites read it.
declare -A tool_env=([helm]=HELM [registry]=REGISTRY_BIN [cosign]=COSIGN_BIN)

# wait_tools NAME...: until each is in bin/.NAME-bin, or start_tools's job has ended
# without it; exports its path (HELM, REGISTRY_BIN, COSIGN_BIN: absolute paths).
wait_tools() {
	local t start=$SECONDS
	for t in "$@"; do
		while [ ! -s "bin/.$t-bin" ] && [ -n "$tools" ] && kill -0 "$tools" 2>/dev/null; do sleep 5; done
		if [ ! -s "bin/.$t-bin" ]; then
			sed 's/^/  /' bin/tools.log
			echo "test: hack/tools.sh $t failed (log above)" >&2
			return 1
		fi
	done
	for t in "$@"; do
		export "${tool_env[$t]}=$(cat "bin/.$t-bin")"
		grep "^tools: built $t " bin/tools.log | sed 's/^/  /' || true
	done
	echo "test: waited $((SECONDS - start))s for $*"
}

# wait_for FILE...: until each is in bin/ (kube-peers.sh moves a binary in only once
# it is whole), or the build has ended without it.
wait_for() {
	local f start=$SECONDS
	for f in "$@"; do
		while [ ! -x "bin/$f" ] && [ -n "$peers" ] && kill -0 "$peers" 2>/dev/null; do sleep 5; done
		if [ ! -x "bin/$f" ]; then
			sed 's/^/  /' "$log" 2>/dev/null || true
			echo "test: bin/$f is missing after hack/kube-peers.sh cluster (log above)" >&2
			return 1
		fi
	done
	echo "test: waited $((SECONDS - start))s for $*"
}

# gotest NAME ARGS...: go test with its compiles at COMPILE_GOGC (the Makefile's, 400:
# a cold run is CPU-bound), its test binaries at the caller's GOGC, which they and the
# relays they start would otherwise inherit: -exec gives it back to them. Its -json
# goes through hack/testsum, which prints what go test would (everything with -v),
# then names the failed and the slowest tests: CI keeps only a run's tail. Every
# test's seconds go to bin/test-durations/NAME.
gotest() {
	local name=$1 run=(env) sum=(-times "bin/test-durations/$1") f
	shift
	for f in "$@"; do case $f in -v | -v=true | -test.v | -test.v=true) sum+=(-v) ;; esac; done
	if [ -n "${GOGC+x}" ]; then run+=("GOGC=$GOGC"); else run+=(-u GOGC); fi
	GOGC=${COMPILE_GOGC:-${GOGC:-100}} "$GO" test -json -exec "${run[*]}" "$@" | bin/testsum "${sum[@]}"
	return "${PIPESTATUS[0]}"
}

# suite NAME: run one suite in the foreground; its minutes go to bin/test-times.
suite() {
	local name=$1 start=$SECONDS rc=0 var=${1^^}_FLAGS own
	read -r -a own <<<"${!var:-}"
	local flags=("${own[@]}" "${test_flags[@]}")
	echo "=== test: $name ($(date -u +%H:%M:%S)) ${flags[*]}"
	case $name in
	unit)
		# bench's variant check runs the binary. -race (UNIT_FLAGS in CI) covers the
		# packages with concurrency of ours; the rest (cmd/ has no tests, hack/,
		# test/docs, test/image) runs without it. Under -race `./...` also compiled
		# the whole distribution, every dependency instrumented, for no test. bench
		# is in the rest: its tests check report arithmetic and variant configs, no
		# goroutine of its own, and under -race they instrumented gonum/plot and its
		# fonts (76 packages bench alone imports) in every cold CI run.
		#
		# backendsconverter rewrites a config and has no goroutine of its own, but its
		# tests run the real filter processor: under -race, OTTL and its parsers (133
		# packages no other test of ours imports) were compiled instrumented in every
		# cold run, for nothing the race detector could find. It runs in the rest,
		# where make build has compiled them.
		local race=() plain=() racy=() others=() f
		for f in "${flags[@]}"; do
			if [ "$f" = -race ]; then race=(-race); else plain+=("$f"); fi
		done
		if ((${#race[@]})); then
			mapfile -t racy < <($GO list ./components/... ./internal/... | grep -v '/components/backendsconverter$')
			mapfile -t others < <($GO list ./... | grep -vxF -f <(printf '%s\n' "${racy[@]}"))
			CGO_ENABLED=1 OTELCOL_RELAY_BIN=$RELAY gotest unit-race -race -tags "$tags" -count=1 -timeout "$TEST_TIMEOUT" "${plain[@]}" \
				"${racy[@]}" || rc=$?
			OTELCOL_RELAY_BIN=$RELAY gotest unit -tags "$tags" -count=1 -timeout "$TEST_TIMEOUT" "${plain[@]}" "${others[@]}" || rc=$?
		else
			OTELCOL_RELAY_BIN=$RELAY gotest unit -tags "$tags" -count=1 -timeout "$TEST_TIMEOUT" "${flags[@]}" ./... || rc=$?
		fi
		;;
	deploy)
		wait_tools helm || rc=$?
		if ((rc == 0)); then
			OTELCOL_RELAY_BIN=$RELAY gotest "$name" -tags "$tags,$name" -count=1 -timeout "$TEST_TIMEOUT" "${flags[@]}" "./test/$name" || rc=$?
		fi
		;;
	reliability)
		OTELCOL_RELAY_BIN=$RELAY gotest "$name" -tags "$tags,$name" -count=1 -timeout "$TEST_TIMEOUT" "${flags[@]}" "./test/$name" || rc=$?
		;;
	e2e | cluster)
		local -n need="${name}_peers"
		wait_for "${need[@]}" || rc=$?
		if [ "$name" = cluster ]; then
			wait_tools helm registry cosign || rc=$?
		fi
		if ((rc == 0)); then
			OTELCOL_RELAY_BIN=$RELAY gotest "$name" -tags "$tags,$name" -count=1 -timeout "$TEST_TIMEOUT" "${flags[@]}" "./test/$name" || rc=$?
		fi
		;;
	image)
		# The Makefile's target: it builds the image (make image: make cross, every
		# PLATFORMS) and the registry, and passes the image's name and version.
		# With podman, in a store of its own, removed after: each commit's image
		# is a new tag, and in the machine's store they added up (5 GiB of layers
		# in a day of runs, then a full disk that failed every suite). HELM, for
		# TestRelease's make release, is start_tools's (built long before, in `all`).
		local store
		wait_tools helm || rc=$?
		if ((rc == 0)); then
			store=$(mktemp -d /tmp/otelcol-relay-image-store.XXXXXX)
			printf '[storage]\ndriver = "overlay"\ngraphroot = "%s/root"\nrunroot = "%s/run"\n' "$store" "$store" >"$store/storage.conf"
			CONTAINERS_STORAGE_CONF=$store/storage.conf make -s test-image RUN= TEST_FLAGS="${flags[*]}" || rc=$?
			if command -v podman >/dev/null; then
				CONTAINERS_STORAGE_CONF=$store/storage.conf podman system reset -f >/dev/null 2>&1 || true
			fi
			rm -rf "$store"
		fi
		;;
	*)
		echo "test: unknown suite $name (all, unit, deploy, reliability, e2e, cluster, image)" >&2
		return 2
		;;
	esac
	printf '%-12s %5.1f min  %s\n' "$name" "$(bc <<<"scale=1; ($SECONDS - $start) / 60")" \
		"$( ((rc == 0)) && echo ok || echo "FAILED (exit $rc)")" >>bin/test-times
	return "$rc"
}

# lane NAME...: the suites one after another, each run even if one before failed.
lane() {
	local s rc=0
	for s in "$@"; do suite "$s" || rc=1; done
	return "$rc"
}

: >bin/test-times
start=$SECONDS
suites=("$@")
((${#suites[@]})) || suites=(all)
want_helm= want_release_tools=
for s in "${suites[@]}"; do
	case $s in e2e | cluster | all) start_peers ;; esac
	case $s in deploy | cluster | image | all) want_helm=1 ;; esac
	case $s in cluster | all) want_release_tools=1 ;; esac
done
tool_names=()
[ -z "$want_helm" ] || tool_names+=(helm)
[ -z "$want_release_tools" ] || tool_names+=(registry cosign)
((${#tool_names[@]} == 0)) || start_tools "${tool_names[@]}"
rc=0
if [ "${suites[*]}" = all ]; then
	# Lane 2's lines are marked, since the two lanes' output interleaves.
	lane deploy cluster > >(sed -u 's/^/[lane 2] /') 2>&1 &
	lane2=$!
	lane unit reliability e2e image || rc=1
	wait "$lane2" || rc=1
else
	lane "${suites[@]}" || rc=1
fi
echo
echo "=== test: minutes per suite (two lanes side by side for all)"
cat bin/test-times
printf '%-12s %5.1f min\n' total "$(bc <<<"scale=1; ($SECONDS - $start) / 60")"
exit "$rc"
