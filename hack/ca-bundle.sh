#!/usr/bin/env bash
# Writes the image's CA bundle (PEM) from Debian's ca-certificates package at a
# pinned version and checksum, so two builds on different hosts put the same roots
# in the image whatever the build host trusts. The bundle is built the way the
# package's own update-ca-certificates builds /etc/ssl/certs/ca-certificates.crt
# with its default configuration: every mozilla/*.crt, in sorted order, each
# ending in a newline.
#
# Usage: hack/ca-bundle.sh OUT
# Moving the pin: `apt-get download ca-certificates=<version>`, then set both
# values below from the file and its `sha256sum`.
set -euo pipefail

out=${1:?usage: hack/ca-bundle.sh OUT}
version=${CA_CERTIFICATES_VERSION:-20250419~deb12u2}
sha256=${CA_CERTIFICATES_SHA256:-b9f76b5271a7ac373fd5e7e1b5b826a71ddd702b42a0d104955ecb1acfffc94b}

cache=${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-relay/ca-certificates
deb=$cache/ca-certificates_${version}_all.deb
mkdir -p "$cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

verified() { echo "$sha256  $1" | sha256sum --check --status; }

if ! { [ -f "$deb" ] && verified "$deb"; }; then
	download() { (cd "$work" && apt-get download -qq "ca-certificates=$version" 2>"$work/apt.err"); }
	if ! download; then
		# A fresh machine has no package lists yet.
		if [ "$(id -u)" = 0 ]; then
			apt-get update -qq && download || true
		fi
	fi
	got=$(find "$work" -maxdepth 1 -name 'ca-certificates_*.deb' | head -n1)
	if [ -z "$got" ]; then
		echo "ca-bundle: apt-get download ca-certificates=$version failed:" >&2
		cat "$work/apt.err" >&2 || true
		echo "ca-bundle: if the archive no longer has this version, move the pin in $0 (CA_CERTIFICATES_VERSION/_SHA256)" >&2
		exit 1
	fi
	if ! verified "$got"; then
		echo "ca-bundle: $(basename "$got") has sha256 $(sha256sum "$got" | cut -d' ' -f1), want $sha256" >&2
		exit 1
	fi
	mv "$got" "$deb"
fi

dpkg-deb -x "$deb" "$work/root"
certs=$work/root/usr/share/ca-certificates
: >"$work/bundle.crt"
(cd "$certs" && find mozilla -type f -name '*.crt' | LC_ALL=C sort) | while read -r crt; do
	sed -e '$a\' "$certs/$crt" >>"$work/bundle.crt"
done
if ! grep -q 'BEGIN CERTIFICATE' "$work/bundle.crt"; then
	echo "ca-bundle: no certificates under usr/share/ca-certificates/mozilla in $deb" >&2
	exit 1
fi
mkdir -p "$(dirname "$out")"
mv "$work/bundle.crt" "$out"
echo "ca-bundle: $(grep -c 'BEGIN CERTIFICATE' "$out") roots from ca-certificates $version -> $out"
