// SPDX-License-Identifier: Apache-2.0

// Package e2e runs the built otelcol-relay binary as a subprocess and talks to it
// over real sockets. It is shared by the end-to-end tests in test/e2e and by the
// benchmarks in bench/, so both exercise exactly what users run.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// BinaryEnv names the environment variable that points the tests at a built
// binary. `make test` sets it after `make build`, so the binary is built once per
// test run and shared by every test package.
const BinaryEnv = "OTELCOL_RELAY_BIN"

// readyLine is what the collector logs once every pipeline has started.
const readyLine = "Everything is ready. Begin running and processing data."

// RepoRoot returns the repository root: the nearest directory above the working
// directory (go test runs in the package's) that holds go.mod. Not from
// runtime.Caller: the builds are -trimpath (the Makefile's GOFLAGS), which
// leaves source paths relative to the module.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("e2e.RepoRoot: %v", err))
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			panic("e2e.RepoRoot: no go.mod above " + dir)
		}
	}
}

// EnsureBinary returns the path of the collector binary. When BinaryEnv is unset
// (a plain `go test ./test/e2e`), it runs `make build` once, which reuses the Go
// build cache, and points BinaryEnv at the result for the rest of the process.
// Call it from TestMain.
func EnsureBinary() (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%q: %w", BinaryEnv, p, err)
		}
		return p, nil
	}
	root := RepoRoot()
	cmd := exec.Command("make", "-C", root, "build")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("make build: %w", err)
	}
	p := filepath.Join(root, "bin", "otelcol-relay")
	return p, os.Setenv(BinaryEnv, p)
}

// Main is a TestMain for packages that run the binary: it settles the binary
// once (EnsureBinary), so every test in the package runs the same one, then
// runs the tests.
func Main(m *testing.M) {
	if _, err := EnsureBinary(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// Binary returns the binary EnsureBinary settled on.
func Binary(t tb.T) string {
	t.Helper()
	p := os.Getenv(BinaryEnv)
	if p == "" {
		t.Fatalf("%s is not set: call e2e.EnsureBinary from TestMain", BinaryEnv)
	}
	return p
}

// syncBuffer is an io.Writer that several goroutines may write while tests read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Options changes how a collector is started.
type Options struct {
	// Env is added to the test process's environment.
	Env []string
	// Args replaces the default arguments (--config <file>).
	Args []string
	// NoWait returns as soon as the process has started instead of waiting for
	// the "Everything is ready" log line.
	NoWait bool
	// ReadyTimeout bounds the wait for readiness; 60s when zero.
	ReadyTimeout time.Duration
	// Dir is the working directory; a fresh temp dir when empty.
	Dir string
	// Binary runs another build instead of the shared one (the benchmark's
	// comparison of two builds); the shared binary when empty.
	Binary string
}

// Collector is a running otelcol-relay process.
type Collector struct {
	t          tb.T
	cmd        *exec.Cmd
	out        *syncBuffer
	ConfigPath string
	done       chan struct{}
	exitErr    error
}

// WriteConfig writes a config file into a fresh temp dir and returns its path.
func WriteConfig(t tb.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Start runs the binary with config and waits until it reports ready. The process
// is stopped with SIGTERM when the test ends; its output is logged if the test
// failed.
func Start(t tb.T, config string, opts Options) *Collector {
	t.Helper()
	args, configPath := opts.Args, ""
	if args == nil {
		configPath = WriteConfig(t, config)
		args = []string{"--config", configPath}
	}
	bin := opts.Binary
	if bin == "" {
		bin = Binary(t)
	}
	c := launch(t, bin, args, opts.Env, opts.Dir)
	c.ConfigPath = configPath
	if !opts.NoWait {
		timeout := opts.ReadyTimeout
		if timeout == 0 {
			timeout = 60 * time.Second
		}
		if err := c.WaitForOutput(readyLine, timeout); err != nil {
			t.Fatalf("collector did not become ready: %v\n%s", err, c.Output())
		}
	}
	return c
}

// StartCommand runs name with args instead of the binary itself, for when the
// collector must be started through a wrapper (for example a shell that first
// enters a memory cgroup and then execs the binary). It returns without waiting for
// readiness; the process is stopped when the test ends and its output is logged if
// the test failed.
func StartCommand(t tb.T, name string, args []string, env []string) *Collector {
	t.Helper()
	return launch(t, name, args, env, "")
}

// launch starts name with args, collects its output, and stops it when the test ends.
func launch(t tb.T, name string, args, env []string, dir string) *Collector {
	t.Helper()
	c := &Collector{t: t, out: &syncBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(name, args...)
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	c.cmd.Dir = dir
	if c.cmd.Dir == "" {
		c.cmd.Dir = t.TempDir()
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		c.exitErr = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		if c.Running() {
			_, _ = c.Stop(30 * time.Second)
		}
		if t.Failed() {
			t.Logf("%s output (pid %d):\n%s", filepath.Base(name), c.cmd.Process.Pid, c.Output())
		}
	})
	return c
}

// PID is the process id.
func (c *Collector) PID() int { return c.cmd.Process.Pid }

// Output is everything the process wrote to stdout and stderr so far.
func (c *Collector) Output() string { return c.out.String() }

// Tail is the last n bytes of s (a collector's output), for failure messages.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// Done is closed when the process has exited.
func (c *Collector) Done() <-chan struct{} { return c.done }

// Running reports whether the process has not exited yet.
func (c *Collector) Running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// WaitForOutput waits until the output contains s, or the process exits.
func (c *Collector) WaitForOutput(s string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if strings.Contains(c.Output(), s) {
			return nil
		}
		select {
		case <-c.done:
			if strings.Contains(c.Output(), s) {
				return nil
			}
			return fmt.Errorf("process exited (%v) before printing %q", c.exitErr, s) //nolint:errorlint // exitErr is nil after a clean exit, which %w would print as %!w(<nil>)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("no %q in output after %s", s, timeout)
}

// Signal sends sig to the process.
func (c *Collector) Signal(sig os.Signal) error { return c.cmd.Process.Signal(sig) }

// Wait waits for the process to exit and returns its exit code.
func (c *Collector) Wait(timeout time.Duration) (int, error) {
	select {
	case <-c.done:
	case <-time.After(timeout):
		return -1, fmt.Errorf("process %d still running after %s", c.PID(), timeout)
	}
	var ee *exec.ExitError
	if errors.As(c.exitErr, &ee) {
		return ee.ExitCode(), nil
	}
	if c.exitErr != nil {
		return -1, c.exitErr
	}
	return 0, nil
}

// Stop sends SIGTERM and waits for the exit code; it kills the process if it
// has not exited within timeout.
func (c *Collector) Stop(timeout time.Duration) (int, error) {
	if !c.Running() {
		return c.Wait(0)
	}
	_ = c.Signal(syscall.SIGTERM)
	code, err := c.Wait(timeout)
	if err != nil {
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	return code, err
}

// Kill sends SIGKILL and waits for the process to go.
func (c *Collector) Kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// Run runs the binary to completion with args and returns its combined output and
// exit code. For subcommands such as `validate` and `components`.
func Run(t tb.T, timeout time.Duration, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	default:
		t.Fatalf("run %v: %v\n%s", args, err, out)
		return "", -1
	}
}

// WaitHTTP polls url until it answers want, or fails the test after timeout.
func WaitHTTP(t tb.T, url string, want int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer %d within %s: last %s", url, want, timeout, last)
}
