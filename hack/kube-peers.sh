#!/usr/bin/env bash
# Builds the Kubernetes peers the suites run against, from the Go module proxy, into
# bin/: etcd and kube-apiserver (test/e2e), and with `cluster` what the one-node
# cluster of test/cluster adds (hack/cluster.sh runs it): kubelet, kube-proxy,
# kube-scheduler, kube-controller-manager, kubectl, containerd v2 with its runc shim
# and ctr (Debian's 1.6 is below the v1.37 support matrix), CoreDNS with only the
# plugins test/cluster's Corefile names, metrics-server, kube-router (NetworkPolicy
# only), local-path-provisioner, and cert-manager's controller and trust-manager for
# the platform overlay.
#
# They build in one throwaway module, outside the project's go.mod (whose pins they
# must not move), with one version of each shared dependency: Kubernetes' staging
# modules at kube_version's, and for the rest the highest any of them or the
# project's build requires, compiled by the project's toolchain: what the project
# compiled first (the standard library, client-go, the API types, gRPC) is in the
# build cache for them (align_with_project).
# Built each in its own module, as upstream releases them, they compiled client-go,
# the API types, gRPC and the rest eight times over (337 MB of Go source against
# 135 MB once); on a fresh two-core machine that was the longest step of CI. Each
# binary is a test peer, not a release of its project: its dependencies are the
# set's, not its own go.mod's. local-path-provisioner imports github.com/Sirupsen/logrus
# where the others import github.com/sirupsen/logrus, a case-insensitive collision that
# one `go build` refuses, so it builds in the set's module but in a `go build` of its
# own, after the others (alone, in its own module, it compiled a second client-go and
# API types: about a fifth of the peers' CPU on a cold machine).
#
# Nothing is rebuilt that exists: a binary already in bin/ is kept, and builds are
# cached outside the work tree (KUBE_PEERS_CACHE, default
# ~/.cache/otelcol-relay/kube-peers) keyed by name, version, the set's versions and mains,
# so a fresh clone on the same machine (CI) only copies them. Without DWARF (the
# binaries are stripped anyway, and generating it is compile time), at priority
# KUBE_PEERS_NICE (default 10: a background job beside a developer's work; CI
# gives it -3, ahead of the rest, as the longest chain of its run).
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
# The project's toolchain (go.mod's toolchain line, which the Makefile selects), not
# the machine's: the compiler is part of every compile's cache key, so with another
# one nothing the project compiled (its binary, the standard library, client-go, the
# API types, gRPC, ...) could serve the peers. See align_with_project.
GOTOOLCHAIN=$("$root/hack/project-toolchain.sh")
export GOTOOLCHAIN
niceness=${KUBE_PEERS_NICE:-10}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The set: every version above, so a change to any one rebuilds them all (they
# share dependencies), the mains this repository writes for two of them, and the
# recipe's number, raised when how the set is built changes what a binary contains
# (2: local-path builds in the set; 3: the project's toolchain and module versions;
# 4: kube-router's firewall alone).
recipe=4
set_id=$({
	printf '%s\n' "$recipe" "$etcd_version" "$kube_version" "$containerd_version" "$coredns_version" \
		"$metrics_server_version" "$kube_router_version" "$cert_manager_version" "$trust_manager_version" "$local_path_version"
	cat "$root/hack/cert-manager-controller.go" "$root/hack/kube-router-firewall.go"
} | sha256sum | cut -c1-8)

# pkg NAME: the main package of peer NAME in the set's module.
pkg() {
	case $1 in
	etcd) echo go.etcd.io/etcd/server/v3 ;;
	kube-apiserver | kubelet | kube-proxy | kube-scheduler | kube-controller-manager | kubectl) echo "k8s.io/kubernetes/cmd/$1" ;;
	containerd | containerd-shim-runc-v2 | ctr) echo "github.com/containerd/containerd/v2/cmd/$1" ;;
	coredns) echo ./coredns ;;
	metrics-server) echo sigs.k8s.io/metrics-server/cmd/metrics-server ;;
	kube-router) echo ./kube-router ;;
	cert-manager-controller) echo ./cert-manager-controller ;;
	trust-manager) echo github.com/cert-manager/trust-manager/cmd/trust-manager ;;
	local-path-provisioner) echo github.com/rancher/local-path-provisioner ;;
	*) echo "kube-peers: no peer $1" >&2; return 1 ;;
	esac
}

# installed NAME: bin/NAME is there, kept, or copied from the cache.
installed() {
	if [ -x "$bin/$1" ]; then
		echo "kube-peers: $bin/$1 exists, not rebuilding"
		return 0
	fi
	if [ -x "$cache/$1-$set_id" ]; then
		echo "kube-peers: $1 from $cache (set $set_id)"
		# A copy then a rename: hack/test.sh takes a binary in bin/ as whole.
		cp "$cache/$1-$set_id" "$bin/.$1.tmp"
		mv "$bin/.$1.tmp" "$bin/$1"
		return 0
	fi
	return 1
}

# set_module: the throwaway module every peer builds in.
set_module() {
	[ -f "$work/set/go.mod" ] && return
	mkdir -p "$work/set/coredns" "$work/set/cert-manager-controller" "$work/set/kube-router"
	(
		cd "$work/set"
		go mod init kubepeers/set >/dev/null 2>&1
		# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces
		# them with ./staging paths, which only work inside its own repository.
		# Take the list from its go.mod and point each at the published release;
		# the replaces hold every peer's client-go, API types, ... at that release.
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
		# CoreDNS is built this way for custom plugin sets (its main only imports
		# core/plugin, the list of every plugin); the full list drags in cloud SDKs.
		cat >coredns/main.go <<-'EOF'
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
		# cert-manager's controller from hack/cert-manager-controller.go (the proxy
		# serves the module github.com/cert-manager/cert-manager, not the module of
		# cert-manager's own main; the file says what it keeps of it).
		sed '/^\/\/go:build ignore$/d' "$root/hack/cert-manager-controller.go" >cert-manager-controller/main.go
		# kube-router's NetworkPolicy firewall alone, from hack/kube-router-firewall.go
		# (the file says what it leaves out, and why).
		sed '/^\/\/go:build ignore$/d' "$root/hack/kube-router-firewall.go" >kube-router/main.go
		go get "k8s.io/kubernetes@$kube_version" "go.etcd.io/etcd/server/v3@$etcd_version" \
			"github.com/containerd/containerd/v2@$containerd_version" "github.com/coredns/coredns@$coredns_version" \
			"sigs.k8s.io/metrics-server@$metrics_server_version" "github.com/cloudnativelabs/kube-router/v2@$kube_router_version" \
			"github.com/cert-manager/cert-manager@$cert_manager_version" "github.com/cert-manager/trust-manager@$trust_manager_version"
		# A go get of its own: loaded with the others, its logrus import collides.
		go get "github.com/rancher/local-path-provisioner@$local_path_version"
		align_with_project
	)
}

# align_with_project: every module the set shares with the project's build at the
# project's version where that is higher (where the set's is higher it stays). A
# compile's cache key holds its dependencies' too, so one differing module at the
# bottom (golang.org/x/sys, gRPC) made every package above it a second compile: with
# the same versions and flags, some 880 packages the project compiled (the standard
# library, client-go, the API types, gRPC, OpenTelemetry) are cache hits for the
# peers, or the other way round, whichever builds first. Requiring the lower
# version changes nothing: the module graph's higher requirement still selects.
# Kept at the set's own: github.com/prometheus/prometheus (metrics-server compiles
# its text parser), whose project version adds some seventy modules to the set's
# graph, its service discovery's cloud SDKs, that no peer compiles, and
# github.com/docker/go-connections, which that version would raise.
align_with_project() {
	local req=()
	mapfile -t req < <(
		LC_ALL=C join <(cd "$root" && GOFLAGS=-mod=readonly go list -deps -test \
			-f '{{with .Module}}{{if not .Main}}{{$m := .Path}}{{with .Replace}}{{if .Version}}{{$m}} {{.Version}}{{end}}{{else}}{{.Path}} {{.Version}}{{end}}{{end}}{{end}}' ./... |
			LC_ALL=C sort -u) \
			<(go list -m -f '{{if not .Replace}}{{.Path}}{{end}}' all | LC_ALL=C sort -u) |
			awk '$1 != "github.com/docker/go-connections" && $1 != "github.com/prometheus/prometheus" { print $1 "@" $2 }'
	)
	((${#req[@]})) || { echo "kube-peers: no module shared with the project" >&2; exit 1; }
	go mod edit "${req[@]/#/-require=}"
	echo "kube-peers: ${#req[@]} modules at the project's versions where higher"
}

# child_cpu VAR: VAR gets the CPU seconds (user and system) of the children this
# shell has waited for, so each build says what it cost besides how long it took
# on a busy machine. `times` in this shell: a $(...) subshell has no children's times.
child_cpu() {
	times >"$work/times"
	printf -v "$1" '%d' "$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] }; printf "%d", n }' "$work/times")"
}

# build NAME...: each NAME not installed yet, in one `go build` of the set (one
# package load, links side by side).
build() {
	local todo=() c
	for c in "$@"; do installed "$c" || todo+=("$c"); done
	((${#todo[@]})) || return 0
	echo "kube-peers: building ${todo[*]} (set $set_id)"
	set_module
	local minor=${kube_version#v1.} start=$SECONDS cpu0 cpu1 pkgs=()
	child_cpu cpu0
	minor=${minor%%.*}
	for c in "${todo[@]}"; do pkgs+=("$(pkg "$c")"); done
	mkdir -p "$work/set/out"
	# Each project's version variable, so --version says what was built. The tag
	# drops urfave/cli's doc generation (containerd's commands); cgo is off, so the
	# binaries are static without the netgo and osusergo tags.
	# GOGC: as the Makefile's COMPILE_GOGC, fewer CPU-seconds in the compiler's GC.
	(cd "$work/set" && GOGC=${GOGC:-400} nice -n "$niceness" go build -trimpath -gcflags=all=-dwarf=false \
		-tags urfave_cli_no_docs -o "$work/set/out/" -ldflags="-s -w \
		-X k8s.io/component-base/version.gitVersion=$kube_version \
		-X k8s.io/component-base/version.gitMajor=1 \
		-X k8s.io/component-base/version.gitMinor=$minor \
		-X k8s.io/component-base/version.gitTreeState=clean \
		-X github.com/containerd/containerd/v2/version.Version=$containerd_version" \
		"${pkgs[@]}")
	for c in "${todo[@]}"; do
		local out=$work/set/out/$c
		[ "$c" = etcd ] && out=$work/set/out/server # go.etcd.io/etcd/server/v3
		cp "$out" "$cache/$c-$set_id"
		mv "$out" "$bin/$c"
	done
	child_cpu cpu1
	echo "kube-peers: built ${todo[*]} in $((SECONDS - start))s, $((cpu1 - cpu0)) CPU-seconds"
}

if [ "${1:-}" = cluster ]; then
	# etcd and kube-apiserver first: test/e2e starts once they are in bin/, and the
	# second build reuses their compile cache. local-path last, in a build of its
	# own (see the header).
	build etcd kube-apiserver
	build kubelet kube-proxy kube-scheduler kube-controller-manager kubectl \
		containerd containerd-shim-runc-v2 ctr coredns metrics-server kube-router \
		cert-manager-controller trust-manager
	build local-path-provisioner
	"$bin/kubelet" --version
	"$bin/containerd" --version
	exit 0
fi

build etcd kube-apiserver
"$bin/etcd" --version | sed -n 1p
"$bin/kube-apiserver" --version
