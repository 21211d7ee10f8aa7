// SPDX-License-Identifier: Apache-2.0

package podidentityprocessor

import (
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), []configtest.Case{
		{Name: "set_aside", Expected: &Config{Mode: ModeSetAside, Attributes: defaultAttributes}},
		{
			Name:     "verify",
			Expected: &Config{Mode: ModeVerify, Attributes: []string{"k8s.pod.uid", "k8s.pod.name", "k8s.namespace.name"}},
		},

		{Name: "", WantErr: `mode: must be set, to "set_aside" (before k8s_attributes) or "verify" (after it)`},
		{Name: "unknown_mode", WantErr: `mode "before": must be "set_aside" (before k8s_attributes) or "verify" (after it)`},
		{Name: "no_attributes", WantErr: "attributes: must name at least one resource attribute, or nothing is protected"},
		{Name: "empty_attribute", WantErr: "attributes[1]: empty name"},
		{Name: "reserved_prefix", WantErr: `attributes[0] "otelcol_relay.claimed.a": the prefix "otelcol_relay.claimed." is reserved for claims set aside`},
		{Name: "listed_twice", WantErr: `attributes[1] "k8s.pod.uid": listed twice`},
		{Name: "misspelt", WantErr: "invalid keys: attribute"},
	})
}
