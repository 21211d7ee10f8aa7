// SPDX-License-Identifier: Apache-2.0

package e2e

import "path/filepath"

// PreviousGatewayConfig is the gateway config as it shipped before otlp_http_wire
// and queue_storage (testdata/gateway-previous.yaml): upstream's otlp_http
// exporter with its persistent queue on file_storage in the queue directory
// itself. A frozen copy rather than today's file edited: an upgrade starts from
// what was released, whatever the shipped file has become since. The upgrade
// test queues a backlog with it and lets the shipped file take that backlog over.
func PreviousGatewayConfig() string {
	return filepath.Join(RepoRoot(), "internal", "e2e", "testdata", "gateway-previous.yaml")
}
