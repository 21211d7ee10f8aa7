#!/usr/bin/env bash
# Prints the toolchain every Go build of the repository uses: go.mod's toolchain
# line (a patch release with the standard library's security fixes), or `auto`
# without one. hack/kube-peers.sh and hack/tools.sh build with it, not with the
# machine's go: the compiler is in every compile's cache key, so only with the
# project's do the standard library and the modules they share with the project
# come from the build cache.
set -euo pipefail
toolchain=$(sed -n 's/^toolchain //p' "$(dirname "$0")/../go.mod")
echo "${toolchain:-auto}"
