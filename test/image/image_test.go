// SPDX-License-Identifier: Apache-2.0

//go:build image

// Package image_test runs the container image the way a cluster would: a 512 MiB
// memory limit, a read-only root filesystem, no capabilities. `make test-image`
// builds the image and runs it (tag `image`, so `go test ./...` leaves it out).
package image_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// runtimeFlags are the ones that work on these machines: runc (crun fails on hybrid
// cgroups and rlimits) and explicit rlimits.
var runtimeFlags = []string{"--runtime", "runc"}

type engine struct {
	bin   string
	image string
}

func newEngine(t *testing.T) engine {
	t.Helper()
	e := engine{bin: os.Getenv("RELAY_CONTAINER"), image: os.Getenv("RELAY_IMAGE")}
	if e.bin == "" || e.image == "" {
		t.Fatal("RELAY_CONTAINER and RELAY_IMAGE must be set: run `make test-image`")
	}
	if !strings.HasSuffix(e.bin, "podman") {
		runtimeFlags = nil
	}
	return e
}

func (e engine) cmd(ctx context.Context, args ...string) *exec.Cmd {
	if strings.HasSuffix(e.bin, "podman") {
		args = append(append([]string{}, runtimeFlags...), args...)
	}
	return exec.CommandContext(ctx, e.bin, args...)
}

func (e engine) output(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := e.cmd(ctx, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", e.bin, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// run starts the image detached under the production constraints and removes it
// when the test ends.
func (e engine) run(t *testing.T, extra ...string) string {
	t.Helper()
	name := fmt.Sprintf("otelcol-relay-test-%d", time.Now().UnixNano())
	args := []string{"run", "-d", "--name", name,
		"--memory", "512m", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"--network", "host"}
	args = append(append(args, extra...), e.image)
	e.output(t, args...)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := e.cmd(context.Background(), "logs", name).CombinedOutput()
			t.Logf("container logs:\n%s", logs)
		}
		_ = e.cmd(context.Background(), "rm", "-f", name).Run()
	})
	return name
}

func (e engine) inspect(t *testing.T, name, format string) string {
	t.Helper()
	return e.output(t, "inspect", "--format", format, name)
}

// TestImageRelaysLogsUnderProductionConstraints mounts a config that forwards to a
// sink in the test, checks health, sends OTLP logs to the gateway's HTTP intake
// (otlp_http_pooled) and checks they arrive, and that the process runs as uid
// 10001 with the limits asked for.
func TestImageRelaysLogsUnderProductionConstraints(t *testing.T) {
	e := newEngine(t)
	sink := e2e.NewSink(t, otlpfixture.SinkOptions{})
	httpAddr, healthAddr := e2e.FreeAddr(t), e2e.FreeAddr(t)
	dir := t.TempDir()
	config := fmt.Sprintf(`
extensions:
  health_check: {endpoint: %q}
receivers:
  otlp_http_pooled: {endpoint: %q}
processors:
  memory_limiter: {check_interval: 1s, limit_percentage: 80, spike_limit_percentage: 20}
exporters:
  otlp_grpc/plaintext-sink:
    endpoint: %q
    tls: {insecure: true}
    sending_queue: {batch: {flush_timeout: 200ms}}
service:
  extensions: [health_check]
  telemetry: {metrics: {level: none}}
  pipelines:
    logs: {receivers: [otlp_http_pooled], processors: [memory_limiter], exporters: [otlp_grpc/plaintext-sink]}
`, healthAddr, httpAddr, sink.GRPCAddr)
	if err := os.WriteFile(dir+"/config.yaml", []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := e.run(t, "-v", dir+":/etc/otelcol-relay:ro")
	e2e.WaitHTTP(t, "http://"+healthAddr+"/", http.StatusOK, 90*time.Second)

	client := e2e.NewHTTPClient("http://"+httpAddr, nil)
	if err := client.SendLogs(context.Background(), otlpfixture.FluentBitLogs(500, 0), otlpfixture.Encoding{Gzip: true}); err != nil {
		t.Fatal(err)
	}
	sink.WaitForLogRecords(t, 500, time.Minute)
	if rep := sink.Loss(seqs(500)); rep.Missing != 0 || rep.Duplicated != 0 {
		t.Fatalf("image relay: %s", rep)
	}

	pid, err := strconv.Atoi(e.inspect(t, name, "{{.State.Pid}}"))
	if err != nil || pid <= 0 {
		t.Fatalf("container pid %q: %v", e.inspect(t, name, "{{.State.Pid}}"), err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "Uid:") || strings.HasPrefix(line, "Gid:") {
			if f := strings.Fields(line); len(f) < 2 || f[1] != "10001" {
				t.Errorf("%s: want 10001", line)
			}
		}
	}
	if got := e.inspect(t, name, "{{.HostConfig.Memory}}"); got != strconv.Itoa(512<<20) {
		t.Errorf("memory limit %s, want %d", got, 512<<20)
	}
	if got := e.inspect(t, name, "{{.HostConfig.ReadonlyRootfs}}"); got != "true" {
		t.Errorf("read-only root: %s", got)
	}
	// memory_limiter's percentages read the cgroup: 80% and 20% of 512 MiB.
	logs := e.output(t, "logs", name)
	if !strings.Contains(logs, `"limit_mib": 409, "spike_limit_mib": 102`) {
		t.Errorf("memory_limiter did not size itself from the 512 MiB cgroup (want 409/102 MiB):\n%s", logs)
	}
}

// TestImageDefaultConfig starts the image with the config baked into it.
func TestImageDefaultConfig(t *testing.T) {
	e := newEngine(t)
	e.run(t)
	e2e.WaitHTTP(t, "http://127.0.0.1:13133/", http.StatusOK, 90*time.Second)
}

func seqs(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// TestImageAnswersAtOperatorPath: the Tigera operator runs
// `/usr/bin/otelcol --config=/etc/otel/config.yaml`, so the image answers there too.
// Listing components needs no network: without --network, podman put the
// container on its default bridge (10.88.0.0/16) through CNI, whose firewall
// plugin failed in a cold CI run while test/cluster ran beside it ("Chain
// 'CNI-FORWARD' does not exist"; most likely kube-router's restore of the
// whole filter table), and 10/8 is no address of ours.
func TestImageAnswersAtOperatorPath(t *testing.T) {
	e := newEngine(t)
	out := e.output(t, "run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"--entrypoint", "/usr/bin/otelcol", e.image, "components")
	if !strings.Contains(out, "certwatch") {
		t.Fatalf("/usr/bin/otelcol components does not list our components:\n%s", out)
	}
}
