// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// profilePath is where the profile of variant in phase ("steady",
// "saturation") of kind ("pprof", "allocs.pprof") is written.
func profilePath(variant, phase, kind string) string {
	return filepath.Join(*profileDir, fmt.Sprintf("%s-%s-%s.%s", *name, variant, phase, kind))
}

// profileAsync takes, when on, the CPU profile (its top into *top) and the
// allocation profile of the same 10 s, after delay, while the phase runs; the
// channel closes when both are saved (at once when off).
func profileAsync(on bool, delay time.Duration, addr, variant, phase string, top *string) <-chan struct{} {
	done := make(chan struct{})
	if !on {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		time.Sleep(delay)
		allocs := make(chan struct{})
		go func() { defer close(allocs); fetchAllocs(addr, variant, phase) }()
		*top = fetchProfile(addr, variant, phase)
		<-allocs
	}()
	return done
}

// fetchAllocs saves what the collector allocated during the same 10 s as the
// CPU profile (`go tool pprof -sample_index=alloc_space`): GC's share of the
// CPU follows the bytes allocated, and this says whose they are.
func fetchAllocs(addr, variant, phase string) {
	f := profilePath(variant, phase, "allocs.pprof")
	if err := saveProfile("http://"+addr+"/debug/pprof/allocs?seconds=10", f); err != nil {
		log.Printf("allocation profile of %s: %v", variant, err)
	}
}

// saveProfile writes what the pprof endpoint at url answers into file.
func saveProfile(url, file string) error {
	// The endpoint samples for 10 s before it answers.
	raw, err := e2e.Get(url, time.Minute)
	if err != nil {
		return err
	}
	return os.WriteFile(file, raw, 0o644)
}

// fetchProfile takes a 10 s CPU profile from the pprof extension and returns the
// top of `go tool pprof -top`.
func fetchProfile(addr, variant, phase string) string {
	f := profilePath(variant, phase, "pprof")
	if err := saveProfile("http://"+addr+"/debug/pprof/profile?seconds=10", f); err != nil {
		return "profile: " + err.Error()
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", f).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("pprof: %v\n%s", err, out)
	}
	return string(out)
}

func trimProfile(p string) string {
	lines := strings.Split(strings.TrimSpace(p), "\n")
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
