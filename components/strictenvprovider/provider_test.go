// SPDX-License-Identifier: Apache-2.0

package strictenvprovider

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

func newTestProvider(t *testing.T) confmap.Provider {
	t.Helper()
	p := NewFactory().Create(confmaptest.NewNopProviderSettings())
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}

func TestUnsetWithoutDefaultIsAnError(t *testing.T) {
	p := newTestProvider(t)
	_, err := p.Retrieve(context.Background(), "env:RELAY_TEST_SURELY_UNSET", nil)
	if err == nil {
		t.Fatal("want an error for an unset variable without default")
	}
	want := `environment variable "RELAY_TEST_SURELY_UNSET" is not set`
	if got := err.Error(); len(got) < len(want) || got[:len(want)] != want {
		t.Fatalf("error %q does not start with %q", got, want)
	}
}

func TestValuesAndDefaults(t *testing.T) {
	t.Setenv("RELAY_TEST_PORT", "4318")
	t.Setenv("RELAY_TEST_EMPTY", "")
	for _, tc := range []struct {
		uri  string
		want any
	}{
		{"env:RELAY_TEST_PORT", 4318},    // typed as YAML, like upstream
		{"env:RELAY_TEST_PORT:-1", 4318}, // set wins over the default
		{"env:RELAY_TEST_SURELY_UNSET:-127.0.0.1", "127.0.0.1"},
		{"env:RELAY_TEST_SURELY_UNSET:-", ""}, // an explicit empty default
		{"env:RELAY_TEST_EMPTY", nil},         // set but empty is not "unset"
	} {
		t.Run(tc.uri, func(t *testing.T) {
			ret, err := newTestProvider(t).Retrieve(context.Background(), tc.uri, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ret.AsRaw()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestInvalidNameKeepsUpstreamError(t *testing.T) {
	t.Setenv("RELAY_TEST_PORT", "1")
	_, err := newTestProvider(t).Retrieve(context.Background(), "env:1BAD:-x", nil)
	if err == nil {
		t.Fatal("want upstream's invalid-name error")
	}
}

func TestScheme(t *testing.T) {
	if s := newTestProvider(t).Scheme(); s != "env" {
		t.Fatalf("scheme %q", s)
	}
}
