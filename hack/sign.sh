#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Signs a release that is in its registry (docs/releasing.md, "Sign"), by digest,
# with cosign and a key pair, then verifies it as a user does:
#   - the image index (what the install files pin) and, with --recursive, each
#     platform's image manifest: `cosign sign`;
#   - each platform's SBOM (dist/$VERSION/sbom-<os>-<arch>.cdx.json) as a
#     CycloneDX attestation on that platform's manifest and on the index:
#     `cosign attest`.
# The signatures and attestations are stored in the registry beside the image
# (cosign's sha256-<digest>.sig and .att tags), not in a transparency log: the
# public key is all a user needs to verify (--insecure-ignore-tlog).
#
# Environment: VERSION (vX.Y.Z, its dist/ must exist), IMAGE_REPO (the repository
# the release was pushed to), COSIGN_KEY (the private key: a file or any key
# reference cosign takes), COSIGN_PUB (the public key users verify with),
# COSIGN_PASSWORD (the private key's password, read by cosign), COSIGN (the
# command, default cosign). Registry credentials and CAs as cosign reads them
# (~/.docker/config.json, SSL_CERT_FILE).
set -euo pipefail

for v in VERSION IMAGE_REPO COSIGN_KEY COSIGN_PUB; do
	if [ -z "${!v:-}" ]; then
		echo "sign: $v is not set (make sign VERSION=vX.Y.Z IMAGE_REPO=... COSIGN_KEY=... COSIGN_PUB=...)" >&2
		exit 2
	fi
done
cosign=${COSIGN:-cosign}
root=$(cd "$(dirname "$0")/.." && pwd)
layout=$root/dist/$VERSION/image
if [ ! -f "$layout/index.json" ]; then
	echo "sign: no release at dist/$VERSION (make release VERSION=$VERSION first)" >&2
	exit 2
fi

blob() { cat "$layout/blobs/${1%%:*}/${1#*:}"; }
index=$(jq -r '.manifests[0].digest' "$layout/index.json")
ref=$IMAGE_REPO@$index
# os-arch and digest of each platform's manifest in the index.
mapfile -t platforms < <(blob "$index" | jq -r '.manifests[] | "\(.platform.os)-\(.platform.architecture) \(.digest)"')

# No transparency log: nothing is uploaded anywhere but the registry.
"$cosign" sign --yes --key "$COSIGN_KEY" --tlog-upload=false --recursive "$ref"
for p in "${platforms[@]}"; do
	read -r plat digest <<<"$p"
	sbom=$root/dist/$VERSION/sbom-$plat.cdx.json
	for subject in "$IMAGE_REPO@$digest" "$ref"; do
		"$cosign" attest --yes --key "$COSIGN_KEY" --tlog-upload=false --type cyclonedx --predicate "$sbom" "$subject"
	done
done

# What a user checks (docs/releasing.md, "Installing a release"), with the public key.
verify() {
	"$cosign" verify --key "$COSIGN_PUB" --insecure-ignore-tlog=true "$1" >/dev/null
	"$cosign" verify-attestation --key "$COSIGN_PUB" --insecure-ignore-tlog=true --type cyclonedx "$1" >/dev/null
}
verify "$ref"
for p in "${platforms[@]}"; do
	read -r _ digest <<<"$p"
	verify "$IMAGE_REPO@$digest"
done
echo "sign: $ref signed, with ${#platforms[@]} platform image(s) and their SBOM attestations, and verified with $COSIGN_PUB"
