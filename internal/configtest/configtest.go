// SPDX-License-Identifier: Apache-2.0

// Package configtest checks a component's named configs in its
// testdata/config.yaml, unmarshalled over the factory's defaults as the collector
// does: the config tests of our components in upstream's shape, with the loop
// written once.
package configtest // import "github.com/otelcol-relay/otelcol-relay/internal/configtest"

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// Case is one named config of testdata/config.yaml and what loading it gives.
type Case struct {
	// Name is what follows "<type>/" in the key; empty for the key "<type>".
	Name string
	// Expected is the whole config a valid entry unmarshals to.
	Expected component.Config
	// WantErr is part of the error an invalid entry fails with: from the
	// unmarshal (an unknown key, a wrong type) or from Validate. It should name
	// the field and the value.
	WantErr string
}

// Run checks every case of f's type in a subtest named by its component ID: a
// valid entry unmarshals to Expected and passes Validate, an invalid one fails
// with WantErr.
func Run(t *testing.T, f component.Factory, cases []Case) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	for _, c := range cases {
		id := component.NewIDWithName(f.Type(), c.Name).String()
		t.Run(id, func(t *testing.T) {
			sub, err := cm.Sub(id)
			require.NoError(t, err)
			cfg := f.CreateDefaultConfig()
			err = sub.Unmarshal(cfg)
			if err == nil {
				err = confmap.Validate(cfg)
			}
			if c.WantErr != "" {
				assert.ErrorContains(t, err, c.WantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.Expected, cfg)
		})
	}
}
