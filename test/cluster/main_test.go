// SPDX-License-Identifier: Apache-2.0

//go:build cluster

// Package cluster runs the shipped manifests on a real one-node Kubernetes cluster
// (hack/cluster.sh: kubelet, containerd, kube-proxy, CoreDNS, metrics-server,
// local-path-provisioner, kube-router), as a platform engineer installs them.
// TestMain brings the cluster up once for the package and down at the end, which
// restores the host. It needs root and the peers of `hack/kube-peers.sh cluster`.
package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	repoRoot   string
	kubeconfig string
	relayImage string // what `make image` tagged, imported into containerd
	upErr      error
)

func TestMain(m *testing.M) {
	// go test runs in this package's directory; not runtime.Caller, which
	// -trimpath (the Makefile's GOFLAGS) leaves relative.
	wd, err := os.Getwd()
	if err != nil {
		fmt.Println("test/cluster:", err)
		os.Exit(1)
	}
	repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))
	if os.Geteuid() != 0 {
		fmt.Println("test/cluster: needs root (a kubelet, containerd, iptables): skipped")
		os.Exit(0)
	}
	start := time.Now()
	cluster := filepath.Join(repoRoot, "hack", "cluster.sh")
	up := exec.Command(cluster, "up")
	up.Stdout, up.Stderr = os.Stdout, os.Stderr
	// A ^C or a go test timeout must still restore the host.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		down(cluster)
		os.Exit(1)
	}()
	upErr = up.Run()
	fmt.Printf("test/cluster: bring-up took %s\n", time.Since(start).Round(100*time.Millisecond))
	var exit *exec.ExitError
	if errors.As(upErr, &exit) && exit.ExitCode() == 3 {
		// Another run's cluster is up on this host: fail without tearing it down.
		signal.Stop(sig)
		fmt.Println("test/cluster: another run's cluster is up on this host; not touching it")
		code := m.Run()
		os.Exit(max(code, 1))
	}
	env, _ := exec.Command(cluster, "env").Output()
	kubeconfig = strings.TrimPrefix(strings.TrimSpace(string(env)), "KUBECONFIG=")
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(kubeconfig)), "run", "relay-image")); err == nil {
		relayImage = strings.TrimSpace(string(b))
	}
	code := m.Run()
	down(cluster)
	// What the shared install kept for every test (it outlives each one).
	if installPKI != nil {
		_ = os.RemoveAll(installPKI.dir)
	}
	if installOverlay != "" {
		_ = os.RemoveAll(installOverlay)
	}
	os.Exit(code)
}

func down(cluster string) {
	cmd := exec.Command(cluster, "down")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "test/cluster: down: %v\n", err)
	}
}

// needCluster fails the test when the bring-up failed.
func needCluster(t *testing.T) {
	t.Helper()
	if upErr != nil {
		t.Fatalf("hack/cluster.sh up failed: %v (its output is above)", upErr)
	}
}

// kubectl runs bin/kubectl against the cluster, with stdin when given.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "bin", "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Dir = repoRoot
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

func mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("%v%s", err, clusterTrouble(t))
	}
	return out
}

// clusterTrouble says what is wrong with the cluster itself, for a failed wait: the
// node's conditions that are not as they should be (DiskPressure evicts every pod
// and admits none) and the latest warning events. Empty when it sees nothing.
func clusterTrouble(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	conds, _ := kubectl(t, "", "get", "nodes", "-o",
		`jsonpath={range .items[*]}{range .status.conditions[*]}{.type}={.status} {.message}{"\n"}{end}{end}`)
	for _, line := range strings.Split(strings.TrimSpace(conds), "\n") {
		typ, rest, _ := strings.Cut(line, "=")
		if status, _, _ := strings.Cut(rest, " "); status != "" && (typ == "Ready") != (status == "True") {
			fmt.Fprintf(&b, "\n  node condition %s", line)
		}
	}
	events, _ := kubectl(t, "", "get", "events", "-A", "--field-selector", "type=Warning",
		"--sort-by=.lastTimestamp", "-o", "custom-columns=NS:.metadata.namespace,OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message", "--no-headers")
	if lines := strings.Split(strings.TrimSpace(events), "\n"); events != "" {
		b.WriteString("\n  latest warning events:")
		for _, l := range lines[max(0, len(lines)-8):] {
			b.WriteString("\n    " + strings.Join(strings.Fields(l), " "))
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\ncluster:" + b.String()
}

// sh runs a README command line (with $NS and friends from env) in dir, kubectl
// being bin/kubectl against the cluster.
func sh(t *testing.T, dir string, env []string, script string) {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+filepath.Join(repoRoot, "bin")+":"+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// eventually polls cond every second until it returns "" or the budget is spent,
// then fails with the last reason. The budgets are bounds for a loaded machine, not
// measurements: the test logs how long each wait took.
func eventually(t *testing.T, what string, budget time.Duration, cond func() string) {
	t.Helper()
	start := time.Now()
	var why string
	for time.Since(start) < budget {
		if why = cond(); why == "" {
			took := time.Since(start).Round(100 * time.Millisecond)
			t.Logf("%s after %s", what, took)
			return
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("%s: not within %s: %s%s", what, budget, why, clusterTrouble(t))
}
