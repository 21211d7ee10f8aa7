#!/usr/bin/env bash
# Everything an overlay needs before its pods can start, for a test or evaluation
# cluster: the namespaces, a private CA and its bundle ConfigMaps, the relay's
# serving keypair, the agents' and fluent-bit's client keypairs, and random
# stand-ins for backend credentials, applied with `kubectl apply --server-side`
# (run it again: nothing changes; the material is kept in .dev-certs/).
#
#   hack/dev-certs.sh deploy/overlays/aks deploy/fluent-bit
#   hack/dev-certs.sh -endpoint https://otlp.example.com:4318 deploy/overlays/example-backend
#
# No private key or token is printed. Production: components/cert-manager
# (overlays/platform) and your backends' real credentials.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./hack/devcerts "$@"
