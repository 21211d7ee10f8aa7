// SPDX-License-Identifier: Apache-2.0

//go:build ignore

// cosign (github.com/sigstore/cosign/v2) for the release tests, built by
// `hack/tools.sh cosign`: cmd/cosign's main without the cloud KMS plugins (AWS,
// Azure, GCP, HashiCorp Vault), which main.go alone registers and which each link
// their cloud's SDK. Every command is cosign's own; a key pair in files, as
// docs/releasing.md signs with, needs none of them.
//
// Usage: cosign COMMAND ... (as cosign)
package main

import (
	"errors"
	"log"
	"os"

	"github.com/sigstore/cosign/v2/cmd/cosign/cli"
	cosignError "github.com/sigstore/cosign/v2/cmd/cosign/errors"
)

func main() {
	if err := cli.New().Execute(); err != nil {
		// cosign's exit codes tell a verification failure from other errors.
		var ce *cosignError.CosignError
		if errors.As(err, &ce) {
			log.Printf("error during command execution: %v", err)
			os.Exit(ce.ExitCode())
		}
		log.Fatalf("error during command execution: %v", err)
	}
}
