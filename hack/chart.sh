#!/usr/bin/env bash
# chart.sh OUT: the Helm chart deploy/helm/otelcol-relay, linted and packaged into
# OUT as otelcol-relay-X.Y.Z.tgz: version X.Y.Z, appVersion vX.Y.Z, the image tag it
# runs by default. make chart (OUT dist/) and hack/release.sh (OUT dist/vX.Y.Z) run
# it, so both package the same way. Its files and the archive itself take
# SOURCE_DATE_EPOCH's time: helm push records the archive's as the chart's creation
# time, so a push of it gives the same digest every time. helm's output is shown
# only when it fails: it logs every symbolic link of the chart's files/ at each load.
#
# Environment: VERSION (vX.Y.Z), SOURCE_DATE_EPOCH, HELM (the helm command).
set -euo pipefail

out=${1:?usage: hack/chart.sh OUT}
for v in VERSION SOURCE_DATE_EPOCH HELM; do
	if [ -z "${!v:-}" ]; then
		echo "chart: $v is not set" >&2
		exit 2
	fi
done
chart_dir=$(cd "$(dirname "$0")/.." && pwd)/deploy/helm/otelcol-relay
chart=$out/otelcol-relay-${VERSION#v}.tgz
mkdir -p "$out"
if ! log=$("$HELM" lint --quiet "$chart_dir" 2>&1 &&
	SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH "$HELM" package "$chart_dir" \
		--version "${VERSION#v}" --app-version "$VERSION" -d "$out" 2>&1) || [ ! -s "$chart" ]; then
	printf '%s\n' "$log" >&2
	echo "chart: helm lint or package of deploy/helm/otelcol-relay failed (above)" >&2
	exit 1
fi
touch -d "@$SOURCE_DATE_EPOCH" "$chart"
echo "$chart"
