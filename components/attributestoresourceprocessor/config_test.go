// SPDX-License-Identifier: Apache-2.0

package attributestoresourceprocessor

import (
	"testing"

	"github.com/otelcol-relay/otelcol-relay/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), []configtest.Case{
		{Name: "pod", Expected: &Config{Keys: []string{"k8s.pod.uid", "k8s.pod.name", "k8s.namespace.name", "k8s.container.name"}}},
		{Name: "keep_resource", Expected: &Config{Keys: []string{"k8s.pod.uid", "k8s.pod.name"}, KeepResource: true}},

		{Name: "", WantErr: "keys: must name at least one record attribute to move into the resource"},
		{Name: "no_keys", WantErr: "keys: must name at least one record attribute to move into the resource"},
		{Name: "empty_key", WantErr: `keys[1] "": empty attribute name`},
		{Name: "blank_key", WantErr: `keys[0] " ": empty attribute name`},
		{Name: "listed_twice", WantErr: `keys[2] "k8s.pod.uid": listed twice`},
		{Name: "misspelt", WantErr: "invalid keys: key"},
	})
}
