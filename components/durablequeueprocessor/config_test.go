// SPDX-License-Identifier: Apache-2.0

package durablequeueprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
)

func TestValidateNamesFieldAndValue(t *testing.T) {
	require.NoError(t, testConfig().Validate())
	cases := map[string]func(*Config){
		"storage: must name a storage extension":  func(c *Config) { c.Storage = component.ID{} },
		"max_bytes: 0 must be positive":           func(c *Config) { c.MaxBytes = 0 },
		"memory_bytes: -1 must not be negative":   func(c *Config) { c.MemoryBytes = -1 },
		"workers: 0 must be at least 1":           func(c *Config) { c.Workers = 0 },
		"batch_items: 0 must be at least 1":       func(c *Config) { c.BatchItems = 0 },
		"flush_timeout: -1s must not be negative": func(c *Config) { c.FlushTimeout = -time.Second },
	}
	for want, edit := range cases {
		c := testConfig()
		edit(c)
		err := c.Validate()
		require.Error(t, err, want)
		assert.Contains(t, err.Error(), want)
	}
}
