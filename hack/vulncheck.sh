#!/usr/bin/env bash
# The vulnerability gate: govulncheck over this module, against a database built
# offline. The Go vulnerability database's website cannot be reached from these
# machines, but the module proxy serves the Go team's database repository,
# golang.org/x/vulndb, whose module holds every OSV entry (data/osv/GO-*.json) and
# its own generator, cmd/indexdb, which writes the v1 layout that
# `govulncheck -db file:///dir` reads (index/db.json, index/modules.json,
# index/vulns.json, ID/GO-YYYY-NNNN.json). docs/dependencies.md ("Vulnerability
# check") says how to bump either pin.
#
# The module's OSV files carry no timestamps (the real database sets `modified`
# from git history, which a module zip does not have), so every zero `modified`
# is set to the vulndb commit's time, the proxy's Time for that pseudo-version:
# that is the database's date, printed on every run.
#
# govulncheck and indexdb are pinned and built by hack/tools.sh (never through
# go.mod: their graphs would move the collector's pins) and cached by version with
# the database in TOOLS_CACHE (default ~/.cache/otelcol-relay/tools), so only the
# first run on a machine builds (about a minute); a cached run costs the scan alone.
# The database is built from golang.org/x/vulndb at indexdb's version, so the two
# never disagree.
#
# Usage: hack/vulncheck.sh [all]     selftest, then source  (make vuln)
#        hack/vulncheck.sh selftest  the gate finds a known reached vulnerability
#                                    in testdata, and nothing once it is fixed
#        hack/vulncheck.sh source    govulncheck ./... with the build's tags
#        hack/vulncheck.sh binary [FILE]  govulncheck -mode binary (default
#                                    bin/otelcol-relay): exactly what ships; at
#                                    module precision when stripped, as make
#                                    build's is
#        hack/vulncheck.sh db        build the database; print its directory
# Exit status: 0 clean, 3 a vulnerable symbol is reached (or the selftest failed),
# anything else an error. VULNCHECK_FLAGS adds flags (e.g. "-show verbose").
set -euo pipefail

# The tags of `make build` (Makefile BUILDTAGS): the code that ships.
BUILDTAGS=remove_all_sd,enable_kubernetes_sd,enable_dns_sd

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-relay/tools}
GO=${GO:-go}
command -v "$GO" >/dev/null || PATH=$PATH:/usr/local/go/bin

log() { echo "vulncheck: $*" >&2; }
# tool NAME: the path of hack/tools.sh's binary for NAME (bin/NAME-VERSION), built
# first if it is not cached.
tool() { GO=$GO "$root/hack/tools.sh" "$1"; }
indexdb=$(tool indexdb)
VULNDB_VERSION=${indexdb##*/indexdb-}

# db: print the directory of the database built from golang.org/x/vulndb at
# VULNDB_VERSION, building it first if it is not cached.
db() {
	local dir=$cache/vulndb-$VULNDB_VERSION
	if [ ! -f "$dir/index/db.json" ]; then
		local work src info when
		work=$(mktemp -d)
		log "building the database from golang.org/x/vulndb@$VULNDB_VERSION"
		# Outside any module: only the module zip is wanted, not a build list.
		info=$(cd "$work" && GOFLAGS=-mod=mod GOWORK=off \
			"$GO" mod download -json "golang.org/x/vulndb@$VULNDB_VERSION") ||
			{ rm -rf "$work"; echo "$info" >&2; return 1; }
		src=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<<"$info")
		when=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' \
			"$(sed -n 's/^\t"Info": "\(.*\)",$/\1/p' <<<"$info")")
		if [ ! -d "$src/data/osv" ] || [ -z "$when" ]; then
			log "golang.org/x/vulndb@$VULNDB_VERSION: no data/osv or no commit time"
			rm -rf "$work"
			return 1
		fi
		mkdir -p "$work/osv"
		cp "$src"/data/osv/GO-*.json "$work/osv/"
		chmod u+w "$work"/osv/*.json
		sed -i "s/^  \"modified\": \"0001-01-01T00:00:00Z\",\$/  \"modified\": \"$when\",/" \
			"$work"/osv/*.json
		"$indexdb" -vulns "$work/osv" -out "$work/db" >&2 || { rm -rf "$work"; return 1; }
		if grep -q '"modified":"0001-' "$work/db/index/db.json"; then
			log "golang.org/x/vulndb@$VULNDB_VERSION: data/osv changed format; no date set"
			rm -rf "$work"
			return 1
		fi
		# govulncheck's file source reads the .json files; the .gz twins are for
		# serving the same tree over HTTP.
		find "$work/db" -name '*.json.gz' -delete
		mkdir -p "$cache"
		rm -rf "$dir.tmp.$$"
		mv "$work/db" "$dir.tmp.$$"
		mv -T "$dir.tmp.$$" "$dir" 2>/dev/null || rm -rf "$dir.tmp.$$" # a concurrent run won
		rm -rf "$work"
	fi
	local modified entries
	modified=$(sed -n 's/.*"modified":"\([^"]*\)".*/\1/p' "$dir/index/db.json")
	entries=$(find "$dir/ID" -name 'GO-*.json' | wc -l)
	if [ -z "$modified" ]; then
		log "$dir/index/db.json has no date: rebuild it (rm -r $dir)"
		return 1
	fi
	log "database golang.org/x/vulndb@$VULNDB_VERSION: modified $modified," \
		"$entries entries, $(((($(date +%s) - $(date -d "$modified" +%s)) / 86400))) days old"
	echo "$dir"
}

# scan DIR ARGS...: govulncheck against the database; its exit status (3: a
# vulnerable symbol is reached).
scan() {
	local dir=$1
	shift
	(cd "$dir" && GOFLAGS=-mod=readonly GOWORK=off nice -n 10 \
		"$govulncheck" -db "file://$database" ${VULNCHECK_FLAGS:-} "$@")
}

# selftest: the fixture calls golang.org/x/text/language.Parse, which GO-2021-0113
# (CVE-2021-38561) reaches below v0.3.7. The gate must fail on it at v0.3.5 and
# name that ID among the reached symbols, and pass, not naming it, at v0.3.7.
selftest() {
	local work out rc
	work=$(mktemp -d)
	cp "$root"/hack/vulncheck/testdata/{go.mod,go.sum,main.go} "$work/"
	chmod u+w "$work"/*
	log "selftest: golang.org/x/text v0.3.5 (vulnerable)"
	rc=0
	out=$(VULNCHECK_FLAGS="-show verbose" scan "$work" ./... 2>&1) || rc=$?
	# Symbol results come first, up to the package results.
	if [ "$rc" != 3 ] ||
		! sed '/^=== Package Results ===/,$d' <<<"$out" | grep -q '^Vulnerability #[0-9]*: GO-2021-0113$'; then
		echo "$out" >&2
		log "selftest FAILED: at v0.3.5 expected exit 3 and GO-2021-0113 reached, got exit $rc"
		rm -rf "$work"
		return 3
	fi
	log "selftest: v0.3.5: exit 3, GO-2021-0113 reached: $(grep -m1 -A0 'calls language.Parse' <<<"$out" | sed 's/^ *//')"

	log "selftest: golang.org/x/text v0.3.7 (fixed)"
	(cd "$work" && "$GO" mod edit -require=golang.org/x/text@v0.3.7)
	rc=0
	out=$(VULNCHECK_FLAGS="-show verbose" scan "$work" ./... 2>&1) || rc=$?
	if [ "$rc" != 0 ] || grep -q 'GO-2021-0113' <<<"$out" ||
		! grep -q '^require golang.org/x/text v0.3.7$' "$work/go.mod"; then
		echo "$out" >&2
		log "selftest FAILED: at v0.3.7 expected exit 0 and no GO-2021-0113, got exit $rc"
		rm -rf "$work"
		return 3
	fi
	log "selftest: v0.3.7: exit 0, GO-2021-0113 not reported"
	rm -rf "$work"
}

# verdict RC WHAT: say what govulncheck's status means and return it.
verdict() {
	case $1 in
	0) log "$2: no reached vulnerability" ;;
	3) log "$2: FAILED: a vulnerable symbol is reached (above; VULNCHECK_FLAGS='-show verbose' for all)" ;;
	*) log "$2: govulncheck failed (exit $1)" ;;
	esac
	return "$1"
}

cmd=${1:-all}
case $cmd in
all | selftest | source | binary | db) ;;
*)
	echo "usage: $0 [all|selftest|source|binary [FILE]|db]" >&2
	exit 2
	;;
esac

database=$(db)
if [ "$cmd" = db ]; then
	echo "$database"
	exit 0
fi
govulncheck=$(tool govulncheck)
log "govulncheck ${govulncheck##*/govulncheck-}, $("$GO" version | awk '{print $3}') at $("$GO" env GOROOT)"

case $cmd in
selftest) selftest ;;
source | all)
	if [ "$cmd" = all ]; then selftest; fi
	rc=0
	scan "$root" -tags "$BUILDTAGS" ./... || rc=$?
	verdict "$rc" "source ./... (tags $BUILDTAGS)"
	;;
binary)
	file=${2:-$root/bin/otelcol-relay}
	[ -f "$file" ] || { log "$file: no such binary (make build)"; exit 1; }
	file=$(realpath "$file")
	# `make build` strips (-s -w): with no symbol table govulncheck cannot tell
	# which functions are linked, so every entry that affects a linked module
	# version or the binary's Go version counts as reached.
	if ! "$GO" tool nm "$file" >/dev/null 2>&1; then
		log "$file is stripped: findings are at module precision, not symbol"
	fi
	rc=0
	scan "$root" -mode binary "$file" || rc=$?
	verdict "$rc" "binary $file"
	;;
esac
