package gomemlimitextension

import (
	"testing"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-relay/otelcol-relay/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	typ := NewFactory().Type()
	configtest.Run(t, NewFactory(), []configtest.Case{
		{ID: component.NewID(typ), Expected: &Config{LimitPercentage: 80}},
		{ID: component.NewIDWithName(typ, "custom"), Expected: &Config{LimitPercentage: 75}},

		{ID: component.NewIDWithName(typ, "zero"), WantErr: "limit_percentage: 0 must be between 1 and 100"},
		{ID: component.NewIDWithName(typ, "above_100"), WantErr: "limit_percentage: 101 must be between 1 and 100"},
		{ID: component.NewIDWithName(typ, "misspelt"), WantErr: "invalid keys: limit_percent"},
	})
}
