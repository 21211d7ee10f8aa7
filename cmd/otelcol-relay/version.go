// This file is not generated: ocb never writes it, and `make generate` leaves it alone.

package main

// version is what `otelcol-relay --version` prints. `make build` sets it with
// -ldflags "-X main.version=$(git describe)"; builder-config.yaml splices it into
// the BuildInfo that ocb generates.
var version = "0.0.0-dev"
