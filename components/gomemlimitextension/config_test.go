// SPDX-License-Identifier: Apache-2.0

package gomemlimitextension

import (
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), []configtest.Case{
		{Name: "", Expected: &Config{LimitPercentage: 80}},
		{Name: "custom", Expected: &Config{LimitPercentage: 75}},

		{Name: "zero", WantErr: "limit_percentage: 0 must be between 1 and 100"},
		{Name: "above_100", WantErr: "limit_percentage: 101 must be between 1 and 100"},
		{Name: "misspelt", WantErr: "invalid keys: limit_percent"},
	})
}
