#!/usr/bin/env bash
# Installs the real peers the tests run against, so `make test` passes on a fresh
# machine that has only Go and Debian's archive.
#
# Usage: hack/test-deps.sh [packages] Idempotent: each step is skipped when
# its result is already there, and built peers are cached in bin/.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_pkgs=()
command -v prometheus >/dev/null 2>&1 || apt_pkgs+=(prometheus)
command -v podman >/dev/null 2>&1 || apt_pkgs+=(podman)
command -v runc >/dev/null 2>&1 || apt_pkgs+=(runc)
command -v kubectl >/dev/null 2>&1 || apt_pkgs+=(kubectl)
command -v unshare >/dev/null 2>&1 || apt_pkgs+=(util-linux)
# make test-image: TestRelease copies the release's OCI layout to the reference
# registry, and back, with skopeo (podman's image library, digests preserved).
command -v skopeo >/dev/null 2>&1 || apt_pkgs+=(skopeo)
# make sign (hack/sign.sh), which test/cluster runs, reads the layout's index with jq.
command -v jq >/dev/null 2>&1 || apt_pkgs+=(jq)
# The one-node cluster of test/cluster (hack/cluster.sh): bridge CNI, kube-proxy's
# and kube-router's iptables/ipset/conntrack, busybox for local-path's helper pods.
[ -x /usr/lib/cni/bridge ] || apt_pkgs+=(containernetworking-plugins)
command -v iptables >/dev/null 2>&1 || apt_pkgs+=(iptables)
command -v ipset >/dev/null 2>&1 || apt_pkgs+=(ipset)
command -v conntrack >/dev/null 2>&1 || apt_pkgs+=(conntrack)
[ -x /bin/busybox ] || apt_pkgs+=(busybox-static)
command -v openssl >/dev/null 2>&1 || apt_pkgs+=(openssl)
command -v bc >/dev/null 2>&1 || apt_pkgs+=(bc)
if ((${#apt_pkgs[@]})); then
	if [ "$(id -u)" != 0 ]; then
		echo "test-deps: need ${apt_pkgs[*]} from Debian; run: sudo apt-get install -y ${apt_pkgs[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# The prometheus package starts a system service on :9090; the tests run their
	# own server on a free loopback port instead, so policy-rc.d keeps it from starting.
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
	apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" ca-certificates
	rm -f /usr/sbin/policy-rc.d
fi

# etcd and kube-apiserver for the deploy/ and k8s_attributes tests, and kubelet,
# containerd, kube-proxy, ... for test/cluster: `cluster` builds them all, in one
# throwaway module, and caches them by version (hack/kube-peers.sh). With
# `packages`, only the Debian packages: make test builds the peers itself, in the
# background while the tests that need none run (hack/test.sh).
if [ "${1:-}" != packages ]; then
	hack/kube-peers.sh cluster
fi
