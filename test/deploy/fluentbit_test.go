// SPDX-License-Identifier: Apache-2.0

//go:build deploy

package deploy_test

// deploy/fluent-bit checked against fluent-bit's documented behaviour and the
// relay's gateway config.

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/otelcol-relay/otelcol-relay/internal/manifest"
)

// TestDeployFluentBitConfig checks deploy/fluent-bit against the facts of
// fluent-bit's opentelemetry output (architecture.md) and against the relay: a
// chunk goes as one request (batch_size), retries never give up and come back
// within a minute, the relay's name is verified, and the keys fluent-bit writes pod
// identity to are the keys the relay lifts into the resource, so k8s_attributes
// can associate relayed logs. fluent-bit itself cannot be installed here; the
// relay side of each fact is tested in test/reliability.
func TestDeployFluentBitConfig(t *testing.T) {
	raw, err := os.ReadFile(manifest.Dir("fluent-bit", "fluent-bit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type props = fluentBitProps
	fb := parseFluentBit(t, raw)
	str := fluentBitString
	list := func(p props, k string) []string {
		var out []string
		switch v := p[k].(type) {
		case []any:
			for _, e := range v {
				out = append(out, strings.Join(strings.Fields(fmt.Sprint(e)), " "))
			}
		case nil:
		default:
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	num := func(p props, k string) int {
		n, aerr := strconv.Atoi(str(p, k))
		if aerr != nil {
			t.Errorf("%s = %q, want a number", k, str(p, k))
		}
		return n
	}

	if got := num(fb.Service, "scheduler.cap"); got > 120 {
		t.Errorf("service scheduler.cap = %d s: after an outage a chunk may wait that long to be retried; keep it at 2 minutes or less", got)
	}
	for _, in := range fb.Pipeline.Inputs {
		if got := str(in, "storage.type"); got != "filesystem" {
			t.Errorf("input %s storage.type = %q, want filesystem buffering", str(in, "name"), got)
		}
	}
	var renamed, removed []string
	for _, f := range fb.Pipeline.Filters {
		if str(f, "name") == "modify" {
			for _, r := range list(f, "rename") {
				renamed = append(renamed, strings.Fields(r)[1])
			}
			removed = append(removed, list(f, "remove")...)
		}
	}
	for _, k := range []string{"time", "_p"} {
		if !slices.Contains(removed, k) {
			t.Errorf("the modify filter keeps %q, which only repeats the record's timestamp or CRI framing", k)
		}
	}
	if len(fb.Pipeline.Outputs) != 1 {
		t.Fatalf("%d outputs, want the one opentelemetry output", len(fb.Pipeline.Outputs))
	}
	output := fb.Pipeline.Outputs[0]
	for k, want := range map[string]string{
		"name": "opentelemetry", "host": "${OTELCOL_RELAY_HOST}", "tls.vhost": "${OTELCOL_RELAY_TLS_NAME}", "port": "4318", "logs_uri": "/v1/logs",
		"tls": "on", "tls.verify": "on", "tls.verify_hostname": "on", "logs_body_key": "$log",
		"logs_body_key_attributes": "on", "retry_limit": "no_limits",
	} {
		if got := str(output, k); got != want {
			t.Errorf("output %s = %q, want %q", k, got, want)
		}
	}
	// The most records measured in one 2 MB chunk (architecture.md); the relay
	// accepts such a chunk whole (TestFluentBitChunkIsAcceptedOrRefusedWhole).
	if got := num(output, "batch_size"); got < 23970 {
		t.Errorf("output batch_size = %d: a chunk would be split into requests, and fluent-bit 3.1 through 5.1.1 drops a refused one that is not the last (#12384)", got)
	}

	var gw struct {
		Processors map[string]struct {
			Keys []string `json:"keys"`
		} `json:"processors"`
	}
	gwRaw, err := os.ReadFile(manifest.Dir("base", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(gwRaw, &gw); err != nil {
		t.Fatal(err)
	}
	lifted := map[string]bool{}
	for name, p := range gw.Processors {
		if strings.HasPrefix(name, "attributes_to_resource") {
			for _, k := range p.Keys {
				lifted[k] = true
			}
		}
	}
	for _, k := range []string{"k8s.pod.name", "k8s.namespace.name", "k8s.pod.uid"} {
		if !slices.Contains(renamed, k) {
			t.Errorf("fluent-bit does not write %s (renames to %v)", k, renamed)
		}
		if !lifted[k] {
			t.Errorf("the gateway's attributes_to_resource does not lift %s into the resource (keys %v)", k, slices.Sorted(maps.Keys(lifted)))
		}
	}
}

type fluentBitProps = map[string]any

// fluentBitConfig is fluent-bit's YAML configuration, as far as the tests read it.
type fluentBitConfig struct {
	Service  fluentBitProps `json:"service"`
	Pipeline struct {
		Inputs, Filters, Outputs []fluentBitProps
	} `json:"pipeline"`
}

func parseFluentBit(t *testing.T, raw []byte) fluentBitConfig {
	t.Helper()
	var fb fluentBitConfig
	if err := yaml.UnmarshalStrict(raw, &fb); err != nil {
		t.Fatal(err)
	}
	return fb
}

// fluentBitString is a property as fluent-bit reads it: on/off/true/false alike
// (YAML 1.1 turns the bare words into booleans).
func fluentBitString(p fluentBitProps, k string) string {
	switch v := p[k].(type) {
	case nil:
		return ""
	case bool:
		return map[bool]string{true: "on", false: "off"}[v]
	default:
		return fmt.Sprint(v)
	}
}
