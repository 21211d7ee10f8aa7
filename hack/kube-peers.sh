#!/usr/bin/env bash
# Builds the control-plane peers the deploy/ proofs run against: etcd and
# kube-apiserver, from the Go module proxy, into bin/.
#
# Each is built in its own throwaway module so that neither the Kubernetes
# dependency graph nor etcd's can move a pin in the project's go.mod. A cold build
# takes 10-20 minutes on two cores, so nothing is rebuilt that exists: a binary
# already in bin/ is kept, and builds are cached per version outside the work
# tree (KUBE_PEERS_CACHE, default ~/.cache/otelcol-relay/kube-peers), so a fresh
# clone on the same machine (CI) only copies them.
#
# `hack/kube-peers.sh cluster` builds, the same way and into the same cache, what the
# one-node cluster of test/cluster adds (hack/cluster.sh runs it): kubelet, kube-proxy,
# kube-scheduler, kube-controller-manager and kubectl in kube-apiserver's throwaway
# module (so they reuse its compile cache: a few minutes together once it is built),
# containerd v2 with its runc shim and ctr (Debian's 1.6 is below the v1.37 support
# matrix), CoreDNS, metrics-server, kube-router (NetworkPolicy only) and
# local-path-provisioner. One build at a time, at the lowest priority.
#
# Usage: hack/kube-peers.sh [cluster]  (BIN=dir to install elsewhere)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/bin}
etcd_version=${ETCD_VERSION:-v3.7.3}
kube_version=${KUBE_VERSION:-v1.37.2}
containerd_version=${CONTAINERD_VERSION:-v2.4.2}
coredns_version=${COREDNS_VERSION:-v1.15.0}
metrics_server_version=${METRICS_SERVER_VERSION:-v0.9.0}
local_path_version=${LOCAL_PATH_PROVISIONER_VERSION:-v0.0.30}
# The module proxy here has only v2.1.0 of kube-router/v2.
kube_router_version=${KUBE_ROUTER_VERSION:-v2.1.0}
# Kubernetes publishes each staging repository (k8s.io/api, k8s.io/apiserver,
# ...) as v0.<minor>.<patch> alongside v1.<minor>.<patch> of k8s.io/kubernetes.
staging_version=v0.${kube_version#v1.}

cache=${KUBE_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-relay/kube-peers}
mkdir -p "$bin" "$cache"
export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# installed NAME VERSION: bin/NAME is there, kept, or copied from the cache.
installed() {
	if [ -x "$bin/$1" ]; then
		echo "kube-peers: $bin/$1 exists, not rebuilding"
		return 0
	fi
	if [ -x "$cache/$1-$2" ]; then
		echo "kube-peers: $1 $2 from $cache"
		cp "$cache/$1-$2" "$bin/$1"
		return 0
	fi
	return 1
}

build_etcd() {
	installed etcd "$etcd_version" && return
	echo "kube-peers: building etcd $etcd_version"
	mkdir -p "$work/etcd"
	(
		cd "$work/etcd"
		go mod init kubepeers/etcd >/dev/null 2>&1
		go get "go.etcd.io/etcd/server/v3@$etcd_version"
		go build -trimpath -ldflags='-s -w' -o "$work/etcd/etcd" go.etcd.io/etcd/server/v3
	)
	cp "$work/etcd/etcd" "$cache/etcd-$etcd_version"
	mv "$work/etcd/etcd" "$bin/etcd"
}

# kube_module: the throwaway module every k8s.io/kubernetes command is built in.
kube_module() {
	[ -f "$work/kube/go.mod" ] && return
	mkdir -p "$work/kube"
	(
		cd "$work/kube"
		go mod init kubepeers/kube >/dev/null 2>&1
		# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces
		# them with ./staging paths, which only work inside its own repository.
		# Take the list from its go.mod and point each at the published release.
		modfile=$(go mod download -json "k8s.io/kubernetes@$kube_version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
		staging=$(sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "$modfile")
		if [ -z "$staging" ]; then
			echo "kube-peers: found no staging replaces in $modfile" >&2
			exit 1
		fi
		for m in $staging; do
			go mod edit -replace "$m=$m@$staging_version"
		done
		go mod edit -require "k8s.io/kubernetes@$kube_version"
	)
}

# build_kube CMD: k8s.io/kubernetes/cmd/CMD at kube_version.
build_kube() {
	installed "$1" "$kube_version" && return
	echo "kube-peers: building $1 $kube_version (staging modules $staging_version)"
	kube_module
	local minor=${kube_version#v1.} start=$SECONDS
	minor=${minor%%.*}
	(cd "$work/kube" && nice -n 19 go build -trimpath -o "$work/kube/$1" -ldflags="-s -w \
		-X k8s.io/component-base/version.gitVersion=$kube_version \
		-X k8s.io/component-base/version.gitMajor=1 \
		-X k8s.io/component-base/version.gitMinor=$minor \
		-X k8s.io/component-base/version.gitTreeState=clean" \
		"k8s.io/kubernetes/cmd/$1")
	cp "$work/kube/$1" "$cache/$1-$kube_version"
	mv "$work/kube/$1" "$bin/$1"
	echo "kube-peers: built $1 $kube_version in $((SECONDS - start))s"
}

build_kube_apiserver() { build_kube kube-apiserver; }

# build_containerd CMD: containerd v2's CMD, without cgo (the btrfs snapshotter, the
# only cgo part, drops out by its build tag).
build_containerd() {
	installed "$1" "$containerd_version" && return
	echo "kube-peers: building $1 $containerd_version"
	local start=$SECONDS
	if [ ! -f "$work/containerd/go.mod" ]; then
		mkdir -p "$work/containerd"
		(cd "$work/containerd" && go mod init kubepeers/containerd >/dev/null 2>&1 &&
			go get "github.com/containerd/containerd/v2@$containerd_version")
	fi
	(cd "$work/containerd" && nice -n 19 go build -trimpath -tags "urfave_cli_no_docs osusergo netgo" \
		-o "$work/containerd/$1" \
		-ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version" \
		"github.com/containerd/containerd/v2/cmd/$1")
	cp "$work/containerd/$1" "$cache/$1-$containerd_version"
	mv "$work/containerd/$1" "$bin/$1"
	echo "kube-peers: built $1 $containerd_version in $((SECONDS - start))s"
}

# build_install NAME VERSION PACKAGE: `go install PACKAGE@VERSION` (module mode, the
# module's own go.mod and go.sum), kept as NAME.
build_install() {
	installed "$1" "$2" && return
	echo "kube-peers: building $1 $2"
	local start=$SECONDS
	mkdir -p "$work/gobin"
	GOFLAGS=-buildvcs=false GOBIN="$work/gobin" nice -n 19 go install -trimpath -ldflags='-s -w' "$3@$2"
	cp "$work/gobin/$(basename "$3")" "$cache/$1-$2"
	mv "$work/gobin/$(basename "$3")" "$bin/$1"
	echo "kube-peers: built $1 $2 in $((SECONDS - start))s"
}

if [ "${1:-}" = cluster ]; then
	# The longest independent build first. The kube commands share most packages with
	# kube-apiserver: whichever is built first fills the compile cache for the rest.
	for c in containerd containerd-shim-runc-v2 ctr; do build_containerd "$c"; done
	for c in kubelet kube-proxy kube-scheduler kube-controller-manager kubectl; do build_kube "$c"; done
	build_install coredns "$coredns_version" github.com/coredns/coredns
	build_install metrics-server "$metrics_server_version" sigs.k8s.io/metrics-server/cmd/metrics-server
	build_install local-path-provisioner "$local_path_version" github.com/rancher/local-path-provisioner
	# Another kube-peers.sh (without `cluster`) may be building etcd and then
	# kube-apiserver: wait for its cache entry rather than build it a second time.
	while [ ! -x "$cache/kube-apiserver-$kube_version" ] &&
		pgrep -f "k8s.io/kubernetes/cmd/kube-apiserver|hack/kube-peers.sh$" >/dev/null; do
		sleep 10
	done
	build_etcd
	build_kube kube-apiserver
	build_install kube-router "$kube_router_version" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
	"$bin/kubelet" --version
	"$bin/containerd" --version
	exit 0
fi

build_etcd
build_kube_apiserver
"$bin/etcd" --version | sed -n 1p
"$bin/kube-apiserver" --version
