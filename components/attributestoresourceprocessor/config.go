// SPDX-License-Identifier: Apache-2.0

package attributestoresourceprocessor

import (
	"errors"
	"fmt"
	"strings"
)

// Config configures one attributes_to_resource instance.
type Config struct {
	// Keys are the record attributes lifted into the resource, in this order
	// after the resource's own attributes (the order groupbyattrs writes them).
	Keys []string `mapstructure:"keys"`
	// KeepResource: a resource that already holds any of the keys keeps all
	// of them as they are; the records' values of the keys are removed, not
	// lifted. Off, a record's value wins (as groupbyattrs).
	KeepResource bool `mapstructure:"keep_resource"`

	_ struct{}
}

func createDefaultConfig() *Config { return &Config{} }

// Validate names the field and the value that is wrong. Unlike groupbyattrs,
// which skips an empty key and warns about a repeated one, both are errors: a
// list that lifts nothing is a mistake, not a way to compact data.
func (c *Config) Validate() error {
	if len(c.Keys) == 0 {
		return errors.New("keys: must name at least one record attribute to move into the resource")
	}
	var errs []error
	seen := make(map[string]bool, len(c.Keys))
	for i, k := range c.Keys {
		switch {
		case strings.TrimSpace(k) == "":
			errs = append(errs, fmt.Errorf("keys[%d] %q: empty attribute name", i, k))
		case seen[k]:
			errs = append(errs, fmt.Errorf("keys[%d] %q: listed twice", i, k))
		}
		seen[k] = true
	}
	return errors.Join(errs...)
}
