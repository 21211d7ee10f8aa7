// SPDX-License-Identifier: Apache-2.0

//go:build reliability

// Package reliability_test runs the gateway (config/gateway.yaml with its
// persistent queue) through overload, backend outage, crash, a full queue volume,
// graceful stop and bad input, with a sender that retries as fluent-bit does and
// a real OTLP sink that counts every sequence number. These are correctness
// checks at a small scale; the overload, outage, crash and graceful-stop
// scenarios come from internal/scenario, which `make bench` runs at full scale
// to put figures on them.
package reliability_test

import (
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

func TestMain(m *testing.M) { e2e.Main(m) }
