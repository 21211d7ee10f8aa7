// SPDX-License-Identifier: Apache-2.0

package gomemlimitextension

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.uber.org/zap"

	"github.com/otelcol-relay/otelcol-relay/components/internal/memtotal"
	"github.com/otelcol-relay/otelcol-relay/internal/memcgroup"
)

func TestExplicitGOMEMLIMITWins(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	g := &gomemlimit{cfg: &Config{LimitPercentage: 80}, logger: zap.NewNop(), paths: memtotal.Proc,
		getenv: func(k string) (string, bool) { return "300MiB", k == "GOMEMLIMIT" }}
	if err := g.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("limit changed to %d with GOMEMLIMIT set", got)
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []uint32{0, 101} {
		err := (&Config{LimitPercentage: p}).Validate()
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("limit_percentage: %d", p)) {
			t.Fatalf("%d: %v", p, err)
		}
	}
}

// TestHelperInCgroup is the child process of TestRealMemoryCgroup.
func TestHelperInCgroup(t *testing.T) {
	if os.Getenv("GOMEMLIMIT_HELPER") != "1" {
		t.Skip("helper process")
	}
	g := &gomemlimit{cfg: &Config{LimitPercentage: 80}, logger: zap.NewNop(), paths: memtotal.Proc, getenv: func(string) (string, bool) { return "", false }}
	if err := g.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("GOMEMLIMIT_BYTES=%d\n", debug.SetMemoryLimit(-1))
	_ = g.Shutdown(context.Background())
}

// TestRealMemoryCgroup runs the extension inside a real memory cgroup limited to
// 512 MiB: the Go limit must be memory_limiter's hard limit to the byte (80% of
// 536870912 = 429496729).
func TestRealMemoryCgroup(t *testing.T) {
	cg := memcgroup.New(t, 536870912)
	argv := cg.Command(os.Args[0], "-test.run=^TestHelperInCgroup$", "-test.v")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "GOMEMLIMIT_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "GOMEMLIMIT_BYTES=429496729\n") {
		t.Fatalf("want GOMEMLIMIT_BYTES=429496729 in:\n%s", out)
	}
}
