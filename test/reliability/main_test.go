// Package reliability_test runs the gateway (config/gateway.yaml with its
// persistent queue) through overload, backend outage, crash, a full queue volume,
// graceful stop and bad input, with a sender that retries as fluent-bit does and
// a real OTLP sink that counts every sequence number. These are correctness
// checks at a small scale; `make bench` runs the same scenarios at full scale and
// puts figures on them.
package reliability_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

func TestMain(m *testing.M) {
	if _, err := e2e.EnsureBinary(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
