// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParsePodCounts(t *testing.T) {
	old := *podCounts
	t.Cleanup(func() { *podCounts = old })
	for in, want := range map[string]string{
		"":                 "[] <nil>",
		"1000,10000,50000": "[1000 10000 50000] <nil>",
		"1000,1000":        `[] -pods "1000,1000": want increasing counts of at least 100`,
		"10":               `[] -pods "10": want increasing counts of at least 100`,
		"1k":               `[] -pods "1k": want increasing counts of at least 100`,
	} {
		*podCounts = in
		got, err := parsePodCounts()
		if s := fmt.Sprint(got, " ", err); s != want {
			t.Errorf("%q: %s, want %s", in, s, want)
		}
	}
}

func TestWritePods(t *testing.T) {
	r := &report{Pods: []podsPoint{
		{Pods: 1000, RelayRSS: 97, RelayAnon: 30, RelayLive: 12, AgentPods: 100, AgentRSS: 96, AgentAnon: 26, RelaySynced: 400 * time.Millisecond, CreatedPerSecs: 146},
		{Pods: 11000, RelayRSS: 230, RelayAnon: 160, RelayLive: 82, AgentPods: 100, AgentRSS: 97, AgentAnon: 27, RelaySynced: 3 * time.Second, CreatedPerSecs: 150},
	}}
	var b strings.Builder
	r.writePods(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
	for _, want := range []string{"| 1000 | 97 | 30 | 12 | - | 400ms | 100 | 96 | 26 | 146 |", "| 11000 | 230 | 160 | 82 | 7.2 | 3s | 100 | 97 | 27 | 150 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
