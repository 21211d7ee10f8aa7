// SPDX-License-Identifier: Apache-2.0

// Command clustertool is the test image of test/cluster (FROM scratch, imported by
// hack/cluster.sh): one static binary with the roles the cluster tests need.
//
//	clustertool lines    a workload: writes $LINES numbered lines to stdout, then waits
//	clustertool send     sends container log files to the relay as fluent-bit does
//	clustertool load     sends numbered records to the relay at a rate the test sets
//	clustertool backend  an OTLP/HTTP backend over mutual TLS that keeps what it gets
//	clustertool probe    dials each host:port argument and logs "OK addr" or "FAIL addr: why"
package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: clustertool lines|send|load|backend|probe")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "lines":
		err = lines()
	case "send":
		err = send()
	case "load":
		err = load()
	case "backend":
		err = backend()
	case "probe":
		probe(os.Args[2:]) // blocks until SIGTERM
	default:
		err = fmt.Errorf("unknown role %q (lines, send, load, backend, probe)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "clustertool:", err)
		os.Exit(1)
	}
}

// lines writes "line <n>" for n in 1..$LINES at $LINES_PER_SECOND, then blocks until
// SIGTERM, so the Deployment stays Ready and its log file stays where the sender reads it.
func lines() error {
	n, err := strconv.Atoi(os.Getenv("LINES"))
	if err != nil || n <= 0 {
		return fmt.Errorf("LINES=%q: want a positive count", os.Getenv("LINES"))
	}
	rate, err := strconv.Atoi(envOr("LINES_PER_SECOND", "200"))
	if err != nil || rate <= 0 {
		return fmt.Errorf("LINES_PER_SECOND=%q: want a positive rate", os.Getenv("LINES_PER_SECOND"))
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 1; i <= n; i++ {
		<-tick.C
		fmt.Printf("line %d of %d\n", i, n)
	}
	fmt.Fprintf(os.Stderr, "wrote %d lines\n", n)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return nil
}

// probe dials every address (a name is resolved through the pod's DNS) until the
// outcome has held for settle, logs the outcome, then blocks so its log can be
// read. A NetworkPolicy controller programs a new pod's rules some seconds after
// the pod starts (kube-router on its pod watch): the first dial would judge the
// state before the policy applies to this pod.
func probe(addrs []string) {
	// The addresses settle side by side: a policy applies to the pod, not per address.
	outcomes := make([]string, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() { outcomes[i] = settledDial(a) })
	}
	wg.Wait()
	for _, o := range outcomes {
		fmt.Println(o)
	}
	fmt.Println("DONE")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}

// settledDial dials a every second until its outcome ("OK a" or "FAIL a: why") has
// held for settle, and returns it.
func settledDial(a string) string {
	const settle, every, limit = 20 * time.Second, time.Second, 2 * time.Minute
	var last string
	var since time.Time
	for start := time.Now(); time.Since(start) < limit; time.Sleep(every) {
		outcome := "OK " + a
		if c, err := net.DialTimeout("tcp", a, 3*time.Second); err != nil { //nolint:gosec // G704: dialing the addresses the test passes as arguments is the probe's purpose (it checks NetworkPolicies); it runs only in the test cluster
			outcome = fmt.Sprintf("FAIL %s: %v", a, err)
		} else {
			c.Close()
		}
		if strings.SplitN(outcome, ":", 2)[0] != strings.SplitN(last, ":", 2)[0] {
			last, since = outcome, time.Now()
		}
		if time.Since(since) >= settle {
			break
		}
	}
	return last
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
