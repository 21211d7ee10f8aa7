// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseNodePodCounts(t *testing.T) {
	old := *nodePodCounts
	t.Cleanup(func() { *nodePodCounts = old })
	for in, want := range map[string]string{
		"":            "[] <nil>",
		"110,250,500": "[110 250 500] <nil>",
		"50, 110":     "[50 110] <nil>",
		"250,110":     `[] -node-pods "250,110": want increasing counts of at least 1`,
		"0":           `[] -node-pods "0": want increasing counts of at least 1`,
		"110,":        `[] -node-pods "110,": want increasing counts of at least 1`,
	} {
		*nodePodCounts = in
		got, err := parseNodePodCounts()
		if s := fmt.Sprint(got, " ", err); s != want {
			t.Errorf("%q: %s, want %s", in, s, want)
		}
	}
}

func TestWriteNodePods(t *testing.T) {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	(&report{}).writeNodePods(w)
	if b.Len() != 0 {
		t.Errorf("no -node-pods, yet a section:\n%s", b.String())
	}
	r := &report{NodePods: []nodePodsPoint{
		{Pods: 110, AgentRSS: 86, AgentAnon: 20, AgentSynced: 1200 * time.Millisecond, CreatedPerSecs: 180},
		{Pods: 500, AgentRSS: 90, AgentAnon: 24, AgentSynced: 1500 * time.Millisecond, CreatedPerSecs: 350},
	}}
	r.writeNodePods(w)
	for _, want := range []string{
		"## Agent memory against its node's pods\n",
		"all on node-00000",
		"no live heap",
		"deploy/agent/daemonset.yaml requests ", // read from the manifest
		"| 110 | 86 | 20 | - | 1.2s | 180 |",
		"| 500 | 90 | 24 | 10.5 | 1.5s | 350 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("section lacks %q:\n%s", want, b.String())
		}
	}
}
