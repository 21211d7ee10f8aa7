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
# module, in one `go build` (they reuse its compile cache and link side by side),
# containerd v2 with its runc shim and ctr (Debian's 1.6 is below the v1.37 support
# matrix), CoreDNS with only the plugins test/cluster's Corefile names, metrics-server,
# kube-router (NetworkPolicy only), local-path-provisioner, and cert-manager's
# controller and trust-manager for the platform overlay. The kube commands and
# the rest build in two lanes side by side: one `go build` leaves a core idle while
# it resolves modules and links, the other lane fills it. At the lowest priority, and
# without DWARF (the binaries are stripped anyway, and generating it is compile time).
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
# deploy/overlays/platform's certificate issuers (test/cluster/platform_test.go).
cert_manager_version=${CERT_MANAGER_VERSION:-v1.21.2}
trust_manager_version=${TRUST_MANAGER_VERSION:-v0.25.0}
# Kubernetes publishes each staging repository (k8s.io/api, k8s.io/apiserver,
# ...) as v0.<minor>.<patch> alongside v1.<minor>.<patch> of k8s.io/kubernetes.
staging_version=v0.${kube_version#v1.}

cache=${KUBE_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-relay/kube-peers}
mkdir -p "$bin" "$cache"
# One build per cache at a time: a second kube-peers.sh (.ci/run starts one early,
# hack/test.sh another) waits here, then copies what the first built.
exec 9>"$cache/.lock"
flock 9
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
		# A copy then a rename: hack/test.sh takes a binary in bin/ as whole.
		cp "$cache/$1-$2" "$bin/.$1.tmp"
		mv "$bin/.$1.tmp" "$bin/$1"
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
		nice -n 19 go build -trimpath -gcflags=all=-dwarf=false -ldflags='-s -w' -o "$work/etcd/etcd" go.etcd.io/etcd/server/v3
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

# build_kube CMD...: k8s.io/kubernetes/cmd/CMD at kube_version, for each CMD not
# installed yet, in one `go build` (one package load, links side by side).
build_kube() {
	local todo=() c
	for c in "$@"; do installed "$c" "$kube_version" || todo+=("$c"); done
	((${#todo[@]})) || return 0
	echo "kube-peers: building ${todo[*]} $kube_version (staging modules $staging_version)"
	kube_module
	local minor=${kube_version#v1.} start=$SECONDS
	minor=${minor%%.*}
	mkdir -p "$work/kube/out"
	(cd "$work/kube" && nice -n 19 go build -trimpath -gcflags=all=-dwarf=false -o "$work/kube/out/" -ldflags="-s -w \
		-X k8s.io/component-base/version.gitVersion=$kube_version \
		-X k8s.io/component-base/version.gitMajor=1 \
		-X k8s.io/component-base/version.gitMinor=$minor \
		-X k8s.io/component-base/version.gitTreeState=clean" \
		"${todo[@]/#/k8s.io/kubernetes/cmd/}")
	for c in "${todo[@]}"; do
		cp "$work/kube/out/$c" "$cache/$c-$kube_version"
		mv "$work/kube/out/$c" "$bin/$c"
	done
	echo "kube-peers: built ${todo[*]} $kube_version in $((SECONDS - start))s"
}

build_kube_apiserver() { build_kube kube-apiserver; }

# build_containerd CMD: containerd v2's CMD, without cgo (the btrfs snapshotter, the
# only cgo part, drops out by its build tag).
build_containerd() {
	local todo=() c
	for c in "$@"; do installed "$c" "$containerd_version" || todo+=("$c"); done
	((${#todo[@]})) || return 0
	echo "kube-peers: building ${todo[*]} $containerd_version"
	local start=$SECONDS
	if [ ! -f "$work/containerd/go.mod" ]; then
		mkdir -p "$work/containerd"
		(cd "$work/containerd" && go mod init kubepeers/containerd >/dev/null 2>&1 &&
			go get "github.com/containerd/containerd/v2@$containerd_version")
	fi
	mkdir -p "$work/containerd/out"
	(cd "$work/containerd" && nice -n 19 go build -trimpath -gcflags=all=-dwarf=false -tags "urfave_cli_no_docs osusergo netgo" \
		-o "$work/containerd/out/" \
		-ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version" \
		"${todo[@]/#/github.com/containerd/containerd/v2/cmd/}")
	for c in "${todo[@]}"; do
		cp "$work/containerd/out/$c" "$cache/$c-$containerd_version"
		mv "$work/containerd/out/$c" "$bin/$c"
	done
	echo "kube-peers: built ${todo[*]} $containerd_version in $((SECONDS - start))s"
}

# build_coredns: CoreDNS with only the plugins test/cluster/addons.yaml's Corefile
# names. CoreDNS is built this way for custom plugin sets (its main only imports
# core/plugin, the list of every plugin); the full list drags in cloud SDKs and
# tracing, which took most of its build.
build_coredns() {
	installed coredns "$coredns_version" && return
	echo "kube-peers: building coredns $coredns_version (cache errors health kubernetes ready)"
	local start=$SECONDS
	mkdir -p "$work/coredns"
	(
		cd "$work/coredns"
		go mod init kubepeers/coredns >/dev/null 2>&1
		go get "github.com/coredns/coredns@$coredns_version"
		cat >main.go <<-'EOF'
			package main

			import (
				"github.com/coredns/coredns/coremain"

				_ "github.com/coredns/coredns/plugin/cache"
				_ "github.com/coredns/coredns/plugin/errors"
				_ "github.com/coredns/coredns/plugin/health"
				_ "github.com/coredns/coredns/plugin/kubernetes"
				_ "github.com/coredns/coredns/plugin/ready"
			)

			func main() { coremain.Run() }
		EOF
		nice -n 19 go build -trimpath -gcflags=all=-dwarf=false -ldflags='-s -w' -o coredns .
	)
	cp "$work/coredns/coredns" "$cache/coredns-$coredns_version"
	mv "$work/coredns/coredns" "$bin/coredns"
	echo "kube-peers: built coredns $coredns_version in $((SECONDS - start))s"
}

# build_install NAME VERSION PACKAGE: `go install PACKAGE@VERSION` (module mode, the
# module's own go.mod and go.sum), kept as NAME.
build_install() {
	installed "$1" "$2" && return
	echo "kube-peers: building $1 $2"
	local start=$SECONDS
	mkdir -p "$work/gobin"
	GOFLAGS=-buildvcs=false GOBIN="$work/gobin" nice -n 19 go install -trimpath -gcflags=all=-dwarf=false -ldflags='-s -w' "$3@$2"
	cp "$work/gobin/$(basename "$3")" "$cache/$1-$2"
	mv "$work/gobin/$(basename "$3")" "$bin/$1"
	echo "kube-peers: built $1 $2 in $((SECONDS - start))s"
}

# build_cert_manager: cert-manager's controller from hack/cert-manager-controller.go
# (the proxy serves the module github.com/cert-manager/cert-manager, not the
# cmd/controller module that holds cert-manager's own main; the file says what it
# keeps of it).
build_cert_manager() {
	installed cert-manager-controller "$cert_manager_version" && return
	echo "kube-peers: building cert-manager-controller $cert_manager_version"
	local start=$SECONDS
	mkdir -p "$work/cert-manager"
	(
		cd "$work/cert-manager"
		go mod init kubepeers/certmanager >/dev/null 2>&1
		cp "$root/hack/cert-manager-controller.go" main.go
		go get "github.com/cert-manager/cert-manager@$cert_manager_version"
		go mod tidy
		nice -n 19 go build -trimpath -gcflags=all=-dwarf=false -ldflags='-s -w' -o cert-manager-controller main.go
	)
	cp "$work/cert-manager/cert-manager-controller" "$cache/cert-manager-controller-$cert_manager_version"
	mv "$work/cert-manager/cert-manager-controller" "$bin/cert-manager-controller"
	echo "kube-peers: built cert-manager-controller $cert_manager_version in $((SECONDS - start))s"
}

if [ "${1:-}" = cluster ]; then
	# Another kube-peers.sh (without `cluster`) may be building etcd and then
	# kube-apiserver: wait for its cache entry rather than build it a second time.
	while [ ! -x "$cache/kube-apiserver-$kube_version" ] &&
		pgrep -f "k8s.io/kubernetes/cmd/kube-apiserver|hack/kube-peers.sh$" >/dev/null; do
		sleep 10
	done
	# Lane 1, the kube commands: they share most packages with kube-apiserver, so
	# it goes first and fills the compile cache for the rest. Lane 2, the others.
	# (Statements, not an && list: set -e must stay in force inside the functions.)
	(
		trap - EXIT
		build_etcd
		build_kube kube-apiserver
		build_kube kubelet kube-proxy kube-scheduler kube-controller-manager kubectl
	) &
	lane1=$!
	(
		trap - EXIT
		build_containerd containerd containerd-shim-runc-v2 ctr
		build_coredns
		build_install metrics-server "$metrics_server_version" sigs.k8s.io/metrics-server/cmd/metrics-server
		build_install local-path-provisioner "$local_path_version" github.com/rancher/local-path-provisioner
		build_install kube-router "$kube_router_version" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
		build_cert_manager
		build_install trust-manager "$trust_manager_version" github.com/cert-manager/trust-manager/cmd/trust-manager
	) &
	lane2=$!
	failed=0
	wait "$lane1" || failed=1
	wait "$lane2" || failed=1
	((failed == 0)) || { echo "kube-peers: a cluster peer failed to build (see above)" >&2; exit 1; }
	"$bin/kubelet" --version
	"$bin/containerd" --version
	exit 0
fi

build_etcd
build_kube_apiserver
"$bin/etcd" --version | sed -n 1p
"$bin/kube-apiserver" --version
