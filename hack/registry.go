// SPDX-License-Identifier: Apache-2.0

//go:build ignore

// The CNCF reference OCI registry (github.com/distribution/distribution/v3) for the
// release tests, built by `hack/tools.sh registry`: cmd/registry's main with the
// filesystem storage driver, the part a registry on a test's own directory needs. The cloud storage drivers (S3, Azure, GCS, CloudFront) are left
// out: each links its cloud's SDK, several times the compile of the rest, and no
// test stores in a cloud.
//
// Usage: registry serve CONFIG.yml
package main

import (
	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

func main() {
	// RootCmd reports its own errors; the exit status is all that is left.
	if err := registry.RootCmd.Execute(); err != nil {
		panic(err)
	}
}
