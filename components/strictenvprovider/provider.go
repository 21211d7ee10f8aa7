// SPDX-License-Identifier: Apache-2.0

// Package strictenvprovider is the `env:` confmap provider of otelcol-relay. It is
// upstream's envprovider with one change: a variable that is not set and has no
// default is an error instead of a warning and an empty string.
//
// Upstream expands `${env:BACKEND_TOKEN}` to "" when BACKEND_TOKEN is unset. For a
// relay that takes its credentials and endpoints from Secrets through the
// environment, that turns a forgotten secretKeyRef into a collector that starts and
// then sends unauthenticated requests, or fails later with an error that names an
// exporter field and not the missing variable. Refusing to start, naming the
// variable, is the safe answer. `${env:NAME:-}` still means "empty is fine".
package strictenvprovider // import "github.com/otelcol-relay/otelcol-relay/components/strictenvprovider"

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
)

const (
	schemeName    = "env"
	defaultSuffix = ":-"
)

type provider struct {
	upstream confmap.Provider
	lookup   func(string) (string, bool)
}

// NewFactory returns a factory for the strict `env:` provider.
func NewFactory() confmap.ProviderFactory {
	return confmap.NewProviderFactory(func(ps confmap.ProviderSettings) confmap.Provider {
		return &provider{upstream: envprovider.NewFactory().Create(ps), lookup: os.LookupEnv}
	})
}

func (p *provider) Retrieve(ctx context.Context, uri string, watcher confmap.WatcherFunc) (*confmap.Retrieved, error) {
	selector, ok := strings.CutPrefix(uri, schemeName+":")
	if !ok {
		return nil, fmt.Errorf("%q uri is not supported by %q provider", uri, schemeName)
	}
	name, _, hasDefault := strings.Cut(selector, defaultSuffix)
	if !hasDefault {
		if _, set := p.lookup(name); !set {
			return nil, fmt.Errorf("environment variable %q is not set: the config references ${env:%s}; set it, or write ${env:%s:-default} to allow a default", name, name, name)
		}
	}
	// Name validation, defaults and YAML typing stay upstream's.
	return p.upstream.Retrieve(ctx, uri, watcher)
}

func (*provider) Scheme() string { return schemeName }

func (p *provider) Shutdown(ctx context.Context) error { return p.upstream.Shutdown(ctx) }
