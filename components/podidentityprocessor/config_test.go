package podidentityprocessor

import (
	"testing"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-relay/otelcol-relay/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	typ := NewFactory().Type()
	configtest.Run(t, NewFactory(), []configtest.Case{
		{ID: component.NewIDWithName(typ, "set_aside"), Expected: &Config{Mode: ModeSetAside, Attributes: defaultAttributes}},
		{
			ID:       component.NewIDWithName(typ, "verify"),
			Expected: &Config{Mode: ModeVerify, Attributes: []string{"k8s.pod.uid", "k8s.pod.name", "k8s.namespace.name"}},
		},

		{ID: component.NewID(typ), WantErr: `mode: must be set, to "set_aside" (before k8s_attributes) or "verify" (after it)`},
		{ID: component.NewIDWithName(typ, "unknown_mode"), WantErr: `mode "before": must be "set_aside" (before k8s_attributes) or "verify" (after it)`},
		{ID: component.NewIDWithName(typ, "no_attributes"), WantErr: "attributes: must name at least one resource attribute, or nothing is protected"},
		{ID: component.NewIDWithName(typ, "empty_attribute"), WantErr: "attributes[1]: empty name"},
		{ID: component.NewIDWithName(typ, "reserved_prefix"), WantErr: `attributes[0] "otelcol_relay.claimed.a": the prefix "otelcol_relay.claimed." is reserved for claims set aside`},
		{ID: component.NewIDWithName(typ, "listed_twice"), WantErr: `attributes[1] "k8s.pod.uid": listed twice`},
		{ID: component.NewIDWithName(typ, "misspelt"), WantErr: "invalid keys: attribute"},
	})
}
