#!/usr/bin/env bash
# make test's order of work. On a cold machine the Kubernetes peers (hack/kube-peers.sh
# cluster: etcd, kube-apiserver, kubelet, containerd, ...) are the slowest step, and most
# of the tests do not need them: the end-to-end tests spend their time waiting on
# servers, which leaves a core idle. So the peers build in the background at the lowest
# priority while the tests that need none run, test/e2e starts once etcd and
# kube-apiserver are in bin/, and test/cluster once every peer is.
#
# Usage: hack/test.sh   (GO, RELAY and TEST_TIMEOUT as make passes them)
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
RELAY=${RELAY:-$PWD/bin/otelcol-relay}
TEST_TIMEOUT=${TEST_TIMEOUT:-60m}
log=bin/kube-peers.log
mkdir -p bin

# A job of its own (set -m) so that its go builds can be stopped as one group when a
# test fails first.
set -m
hack/kube-peers.sh cluster >"$log" 2>&1 &
peers=$!
set +m
trap 'kill -- -"$peers" 2>/dev/null || true' EXIT

# peers_done: the background build's status, once, with its log.
peers_status=
peers_done() {
	if [ -z "$peers_status" ]; then
		peers_status=0
		wait "$peers" || peers_status=$?
		sed 's/^/  /' "$log"
	fi
	return "$peers_status"
}

# wait_for FILE...: until each is in bin/ (kube-peers.sh moves a binary in only once
# it is whole), or the build has ended.
wait_for() {
	local f start=$SECONDS
	for f in "$@"; do
		while [ ! -x "bin/$f" ] && kill -0 "$peers" 2>/dev/null; do sleep 5; done
		if [ ! -x "bin/$f" ]; then
			peers_done || { echo "test: the Kubernetes peers failed to build (log above)" >&2; exit 1; }
			echo "test: bin/$f is missing after hack/kube-peers.sh cluster (log above)" >&2
			exit 1
		fi
	done
	echo "test: waited $((SECONDS - start))s for $*"
}

$GO test -count=1 -timeout "$TEST_TIMEOUT" ./components/... ./internal/... ./bench/...

# The end-to-end packages run one at a time (-p 1): they start real servers and load
# the collector, and two of them at once on a 2-core machine only add noise.
mapfile -t early < <($GO list ./test/... | grep -v -e '/test/e2e$' -e '/test/cluster$')
OTELCOL_RELAY_BIN=$RELAY $GO test -p 1 -count=1 -timeout "$TEST_TIMEOUT" "${early[@]}"

wait_for etcd kube-apiserver
OTELCOL_RELAY_BIN=$RELAY $GO test -p 1 -count=1 -timeout "$TEST_TIMEOUT" ./test/e2e

wait_for kubelet kube-proxy kube-scheduler kube-controller-manager kubectl \
	containerd containerd-shim-runc-v2 ctr coredns metrics-server local-path-provisioner kube-router \
	cert-manager-controller trust-manager
peers_done || { echo "test: the Kubernetes peers failed to build (log above)" >&2; exit 1; }
OTELCOL_RELAY_BIN=$RELAY $GO test -p 1 -count=1 -timeout "$TEST_TIMEOUT" ./test/cluster
