#!/usr/bin/env bash
# Installs the pinned Go tools that must not be in go.mod: their dependency graphs
# would move the collector's pins through minimal version selection (see
# docs/dependencies.md). Each is built by `go install MODULE/CMD@VERSION` from an
# empty temp dir, so the project's module is not involved, and cached by version
# outside the work tree (TOOLS_CACHE, default ~/.cache/otelcol-relay/tools); a
# cached binary is reused, so only the first run on a machine compiles (minutes).
# The binary is copied to bin/NAME-VERSION and its path printed on stdout (the
# only thing printed there; progress goes to stderr).
#
# Usage: hack/tools.sh golangci-lint|govulncheck|indexdb|registry|cosign|helm
#        (BIN=dir to install elsewhere, GO=go command, TOOLS_NICE=the compile's
#        niceness, default 10)
# registry is the CNCF reference registry from hack/registry.go, built in a module
# of its own that requires only distribution/v3 at the version below; its path
# ends in that version and a hash of the file. cosign is cosign's own main from
# hack/cosign.go, the same way (without the cloud KMS plugins).
# indexdb's version is golang.org/x/vulndb's: hack/vulncheck.sh builds its database
# from that module at the version in the path printed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/bin}
cache=${TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-relay/tools}
go=${GO:-go}

# install NAME MODULE/CMD VERSION [MAIN]: print the path of bin/NAME-VERSION, built
# into the cache first if it is not there. With MAIN (a //go:build ignore file in
# hack/), that file is the main package, in a module requiring MODULE at VERSION.
install() {
	local name=$1 pkg=$2 module_version=$3 main=${4:-}
	# A main of ours is part of the version: a change to it is another binary.
	local version=$module_version
	[ -z "$main" ] || version=$version-$(sha256sum "$root/hack/$main" | cut -c1-8)
	local cached=$cache/$name-$version out=$bin/$name-$version
	mkdir -p "$cache" "$bin"
	# One build of a tool at a time (make test-image and the cluster suite both
	# want the registry): a second run waits here, then finds it cached.
	local lock
	exec {lock}>"$cache/.lock-$name"
	flock "$lock"
	if [ ! -x "$cached" ]; then
		echo "tools: building $name $version ($pkg@$module_version)" >&2
		local work
		work=$(mktemp -d)
		# The temp dir holds no go.mod: the tool is resolved from its own go.mod.
		# Compiled by the project's toolchain (go.mod's toolchain line), not the
		# machine's: the compiler is in every compile's cache key, so the standard
		# library and the modules the tool shares with the project at the same
		# version are cache hits. bash's time reports the build's wall and CPU
		# seconds (a cold CI run's budget counts both).
		local TIMEFORMAT="tools: built $name $version in %0R s (CPU %0U s user, %0S s system)"
		time (
			cd "$work"
			GOTOOLCHAIN=$("$root/hack/project-toolchain.sh")
			export GOTOOLCHAIN GOGC=${GOGC:-400} GOBIN="$work/bin" GOFLAGS="-mod=mod -trimpath -gcflags=all=-dwarf=false" GOWORK=off
			if [ -z "$main" ]; then
				nice -n "${TOOLS_NICE:-10}" "$go" install "$pkg@$module_version" >&2
			else
				"$go" mod init "tools/$name" >&2
				sed '/^\/\/go:build ignore$/d' "$root/hack/$main" >main.go
				"$go" get "$pkg@$module_version" >&2
				nice -n "${TOOLS_NICE:-10}" "$go" build -o "$work/bin/$name" . >&2
			fi
		) || { rm -rf "$work"; return 1; }
		# A copy then a rename, so a concurrent run never sees half a binary.
		cp "$work/bin/$name" "$cached.tmp.$$"
		mv "$cached.tmp.$$" "$cached"
		rm -rf "$work"
	fi
	if ! cmp -s "$cached" "$out"; then
		cp "$cached" "$out.tmp.$$"
		mv "$out.tmp.$$" "$out"
	fi
	echo "$out"
}

case "${1:-}" in
golangci-lint)
	install golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint v2.15.0
	;;
govulncheck)
	install govulncheck golang.org/x/vuln/cmd/govulncheck v1.10.0
	;;
indexdb)
	install indexdb golang.org/x/vulndb/cmd/indexdb v0.0.0-20261105234957-e22db6528018
	;;
registry)
	install registry github.com/distribution/distribution/v3 v3.1.2 registry.go
	;;
cosign)
	install cosign github.com/sigstore/cosign/v2 v2.6.5 cosign.go
	;;
helm)
	install helm helm.sh/helm/v4/cmd/helm v4.3.2
	;;
*)
	echo "usage: $0 golangci-lint|govulncheck|indexdb|registry|cosign|helm" >&2
	exit 2
	;;
esac
