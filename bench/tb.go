// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/otelcol-relay/otelcol-relay/internal/tb"
)

// runTB lets the bench run the e2e harness and the scenarios (written for
// tests) outside `go test`: it implements tb.T, failures panic and are
// recovered per measurement, cleanups run when the measurement ends.
type runTB struct {
	name     string
	cleanups []func()
	failed   bool
	errors   []string
}

var _ tb.T = (*runTB)(nil)

type fatal struct{ msg string }

func newTB(name string) *runTB { return &runTB{name: name} }

func (t *runTB) Helper()                         {}
func (t *runTB) Failed() bool                    { return t.failed }
func (t *runTB) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }
func (t *runTB) Logf(format string, args ...any) { log.Printf(t.name+": "+format, args...) }
func (t *runTB) Errorf(format string, args ...any) {
	t.failed = true
	t.errors = append(t.errors, fmt.Sprintf(format, args...))
	t.Logf("ERROR: "+format, args...)
}
func (t *runTB) Fatal(args ...any) { t.failed = true; panic(fatal{fmt.Sprint(args...)}) }
func (t *runTB) Fatalf(format string, args ...any) {
	t.failed = true
	panic(fatal{fmt.Sprintf(format, args...)})
}
func (t *runTB) Skip(args ...any) { panic(fatal{"skipped: " + fmt.Sprint(args...)}) }
func (t *runTB) Skipf(format string, args ...any) {
	panic(fatal{"skipped: " + fmt.Sprintf(format, args...)})
}
func (t *runTB) TempDir() string {
	d, err := os.MkdirTemp("", "relay-bench-")
	if err != nil {
		panic(fatal{err.Error()})
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// done runs the cleanups, last registered first.
func (t *runTB) done() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}

// measure runs f with a fresh runTB and turns a Fatal into an error.
func measure(name string, f func(t *runTB)) (err error) {
	t := newTB(name)
	defer t.done()
	defer func() {
		if r := recover(); r != nil {
			if fe, ok := r.(fatal); ok {
				err = fmt.Errorf("%s: %s", name, fe.msg)
				return
			}
			panic(r)
		}
	}()
	f(t)
	if t.failed {
		return fmt.Errorf("%s: %s", name, strings.Join(t.errors, "; "))
	}
	return nil
}

func (t *runTB) ctx() context.Context { return context.Background() }
