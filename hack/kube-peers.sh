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
# Usage: hack/kube-peers.sh            (BIN=dir to install elsewhere)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/bin}
etcd_version=${ETCD_VERSION:-v3.7.3}
kube_version=${KUBE_VERSION:-v1.37.2}
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

build_kube_apiserver() {
	installed kube-apiserver "$kube_version" && return
	echo "kube-peers: building kube-apiserver $kube_version (staging modules $staging_version)"
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
		minor=${kube_version#v1.}
		minor=${minor%%.*}
		go build -trimpath -o "$work/kube/kube-apiserver" -ldflags="-s -w \
			-X k8s.io/component-base/version.gitVersion=$kube_version \
			-X k8s.io/component-base/version.gitMajor=1 \
			-X k8s.io/component-base/version.gitMinor=$minor \
			-X k8s.io/component-base/version.gitTreeState=clean" \
			k8s.io/kubernetes/cmd/kube-apiserver
	)
	cp "$work/kube/kube-apiserver" "$cache/kube-apiserver-$kube_version"
	mv "$work/kube/kube-apiserver" "$bin/kube-apiserver"
}

build_etcd
build_kube_apiserver
"$bin/etcd" --version | sed -n 1p
"$bin/kube-apiserver" --version
