// SPDX-License-Identifier: Apache-2.0

// Package tb names what the test harnesses (internal/e2e, internal/otlpfixture,
// internal/testcerts, internal/scenario) need from their caller. *testing.T and
// *testing.B satisfy it, and so does the benchmark's own runner, which runs the
// same harness outside `go test` without a testing.TB to embed.
package tb

// T is the part of testing.TB the harnesses call.
type T interface {
	Helper()
	Cleanup(func())
	TempDir() string
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
	Skipf(format string, args ...any)
	Failed() bool
}
