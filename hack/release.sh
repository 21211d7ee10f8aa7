#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# dist/$VERSION/ for a release tag: `make release` runs it after `make
# release-check` and `make cross` (docs/releasing.md says what each file is
# for). The image is the Dockerfile built around make cross's binaries, as make
# image builds it, the manifests are deploy/ as kustomize renders it with that
# image pinned by digest, the chart is deploy/helm/otelcol-relay packaged as
# `make chart` does, the notes are the tag's CHANGELOG section. Every step is
# deterministic, so two runs on one commit write the same bytes (TestRelease).
#
# Environment (the Makefile passes each): VERSION (vX.Y.Z), REVISION (the
# commit), SOURCE_DATE_EPOCH (its time), IMAGE_REPO (the name the manifests are
# to pull), DEPLOY_IMAGE (the name deploy/components/image gives the image),
# PLATFORMS, CONTAINER, CONTAINER_FLAGS, BIN, HELM (the helm command: hack/tools.sh
# helm's).
set -euo pipefail

for v in VERSION REVISION SOURCE_DATE_EPOCH IMAGE_REPO DEPLOY_IMAGE PLATFORMS CONTAINER BIN HELM; do
	if [ -z "${!v:-}" ]; then
		echo "release: $v is not set (run make release VERSION=vX.Y.Z)" >&2
		exit 2
	fi
done
if [[ ! $VERSION =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
	echo "release: VERSION=\"$VERSION\" is not a release version vX.Y.Z" >&2
	exit 2
fi
case $CONTAINER in
*podman*) ;;
*)
	echo "release: the multi-platform OCI layout needs podman (CONTAINER=$CONTAINER)" >&2
	exit 2
	;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
dist=$root/dist/$VERSION
rm -rf "$dist"
mkdir -p "$dist"
# Inside the repository: kustomize takes a base only by a relative path.
work=$(mktemp -d "$root/dist/.release.XXXXXX")
store=$(mktemp -d)
trap 'rm -rf "$work" "$store"' EXIT

# The image, every platform of it, as an OCI layout (image/) tagged $VERSION:
# what a registry receives on push. Built in a storage of its own, thrown away
# after: in the user's, a layer cached from another commit's build keeps that
# build's file times, and podman mis-records a manifest list instance whose
# image (same content, same ID) is already stored.
own_podman() {
	# shellcheck disable=SC2086 # CONTAINER_FLAGS is a list of flags
	"$CONTAINER" ${CONTAINER_FLAGS:-} --root "$store/root" --runroot "$store/run" --storage-driver vfs "$@"
}
image=$IMAGE_REPO:$VERSION
own_podman manifest create "$image" >/dev/null
for p in $PLATFORMS; do
	own_podman build --quiet --platform "$p" --manifest "$image" --timestamp "$SOURCE_DATE_EPOCH" \
		--build-arg VERSION="$VERSION" --build-arg REVISION="$REVISION" -f "$root/Dockerfile" "$root" >/dev/null
done
own_podman manifest push --quiet --all --format oci --digestfile "$work/digest" "$image" "oci:$dist/image:$VERSION"
digest=$(cat "$work/digest")
if [[ ! $digest =~ ^sha256:[0-9a-f]{64}$ ]]; then
	echo "release: $CONTAINER gave the digest \"$digest\" for $image" >&2
	exit 1
fi
ref=$IMAGE_REPO@$digest

# Each platform's SBOM, the one make cross wrote beside its binary (and the one
# inside the image at /usr/share/doc/otelcol-relay/sbom.cdx.json).
for p in $PLATFORMS; do
	os=${p%/*} arch=${p#*/}
	cp "$BIN/${os}_${arch}/otelcol-relay.cdx.json" "$dist/sbom-$os-$arch.cdx.json"
done

# One file per install, as `kubectl apply --server-side -f` takes it: the roots
# deploy/README.md installs, with the relay's image by digest, not by tag.
installs=(
	"relay deploy/base deploy/agent"
	"aks deploy/overlays/aks"
	"platform deploy/overlays/platform"
	"tigera deploy/overlays/tigera"
	"cert-manager deploy/cert-manager deploy/cert-manager/trust-manager"
	"fluent-bit deploy/fluent-bit"
	"platform-fluent-bit deploy/overlays/platform-fluent-bit"
)
for install in "${installs[@]}"; do
	read -r name roots <<<"$install"
	k=$work/$name
	mkdir -p "$k"
	{
		echo "apiVersion: kustomize.config.k8s.io/v1beta1"
		echo "kind: Kustomization"
		echo "resources:"
		for r in $roots; do echo "  - $(realpath --relative-to="$k" "$root/$r")"; done
		echo "images:"
		echo "  - name: $DEPLOY_IMAGE"
		echo "    newName: $IMAGE_REPO"
		echo "    digest: $digest"
	} >"$k/kustomization.yaml"
	out=$dist/install-$name.yaml
	{
		echo "# otelcol-relay $VERSION, install \"$name\": $roots (deploy/README.md),"
		echo "# the relay image pinned by digest: $ref"
		echo "# kubectl apply --server-side -f install-$name.yaml"
		kubectl kustomize "$k"
	} >"$out"
	# An image of ours left by tag would pull whatever the tag points to later.
	if grep -nE "image: *($DEPLOY_IMAGE|$IMAGE_REPO):" "$out" >&2; then
		echo "release: install-$name.yaml names the relay image by tag (above), not by digest" >&2
		exit 1
	fi
done

# The Helm chart, otelcol-relay-X.Y.Z.tgz, as make chart packages it.
"$root/hack/chart.sh" "$dist" >/dev/null

# The release notes: the page's template with this release's image, digest and
# its sections of CHANGELOG.md and UPGRADING.md ("## X.Y.Z", or "## X.Y.Z (...)").
section() {
	local body
	body=$(awk -v h="## ${VERSION#v}" '$0 == h || index($0, h " ") == 1 {on = 1; next} on && /^## / {exit} on' "$root/$1")
	if [ -z "$(tr -d '[:space:]' <<<"$body")" ]; then
		echo "release: $1 has no \"## ${VERSION#v}\" section with entries" >&2
		exit 1
	fi
	printf '%s\n' "$body" >"$2"
}
section CHANGELOG.md "$work/changes"
section UPGRADING.md "$work/upgrading"
platforms=$(tr ' ' '\n' <<<"$PLATFORMS" | sed '/^$/d' | paste -sd, - | sed 's/,/, /g')
awk -v version="$VERSION" -v chartversion="${VERSION#v}" -v ref="$ref" -v image="$image" -v repo="$IMAGE_REPO" -v digest="$digest" -v name="$DEPLOY_IMAGE" -v platforms="$platforms" -v changes="$work/changes" -v upgrading="$work/upgrading" '
	/^\{\{changes\}\}$/ { while ((getline l < changes) > 0) print l; next }
	/^\{\{upgrading\}\}$/ { while ((getline l < upgrading) > 0) print l; next }
	{ gsub(/\{\{version\}\}/, version); gsub(/\{\{chartversion\}\}/, chartversion); gsub(/\{\{ref\}\}/, ref); gsub(/\{\{image\}\}/, image); gsub(/\{\{repo\}\}/, repo); gsub(/\{\{digest\}\}/, digest); gsub(/\{\{name\}\}/, name); gsub(/\{\{platforms\}\}/, platforms); print }
' "$root/docs/release-notes.md.tmpl" >"$dist/RELEASE-NOTES.md"

# Every file, for `sha256sum -c SHA256SUMS` in dist/$VERSION/.
(cd "$dist" && find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs -d '\n' sha256sum >SHA256SUMS)

echo "release $VERSION: dist/$VERSION/, image $ref ($(wc -l <"$dist/SHA256SUMS") files in SHA256SUMS)"
