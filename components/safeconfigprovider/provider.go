// Package safeconfigprovider is the `file:` confmap provider of otelcol-relay. It
// reads files exactly like upstream's fileprovider and then inspects each config
// document as written, before `${env:...}`/`${file:...}` are expanded, for the one
// mistake nothing later in the pipeline can see: a credential written literally
// into the config (and so into a ConfigMap).
//
// It also records, for every exporter header, which environment variables the
// value comes from, under the top-level key HeaderEnvKey. The collector merges that
// key across `--config` files exactly as it merges the headers themselves, and
// components/safeconfigconverter reads it (to find two backends sharing a
// credential variable) and deletes it before the config is unmarshalled. The two
// components are meant to be installed together; see README.md.
package safeconfigprovider // import "github.com/otelcol-relay/otelcol-relay/components/safeconfigprovider"

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
)

// HeaderEnvKey is the top-level key under which the provider records, per exporter
// and header, the space-separated names of the environment variables the header
// value is read from. safeconfigconverter consumes and removes it.
const HeaderEnvKey = "safeconfig_header_env"

// ListFilesKey is the top-level key under which the provider records each config
// file that sets a list under service:: (extensions, or a pipeline's receivers,
// processors or exporters). Without the confmap.enableMergeAppendOption gate, a
// second such file replaces those lists instead of adding to them; the converter
// refuses that. Paths are map keys so the record survives the merge of files.
const ListFilesKey = "safeconfig_service_list_files"

const schemeName = "file"

type provider struct {
	upstream confmap.Provider
}

// NewFactory returns a factory for the checking `file:` provider. It replaces
// upstream's fileprovider (both use the scheme "file").
func NewFactory() confmap.ProviderFactory {
	return confmap.NewProviderFactory(func(ps confmap.ProviderSettings) confmap.Provider {
		return &provider{upstream: fileprovider.NewFactory().Create(ps)}
	})
}

func (p *provider) Retrieve(ctx context.Context, uri string, watcher confmap.WatcherFunc) (*confmap.Retrieved, error) {
	ret, err := p.upstream.Retrieve(ctx, uri, watcher)
	if err != nil {
		return nil, err
	}
	raw, err := ret.AsRaw()
	if err != nil {
		// Not YAML: upstream already made it a string (a token file behind
		// ${file:...}); nothing of ours to check.
		return ret, nil //nolint:nilerr // the resolver reports the hint if it matters
	}
	doc, ok := raw.(map[string]any)
	if !ok {
		// A scalar: the content of a ${file:...} secret, not a config document.
		return ret, nil
	}
	path := strings.TrimPrefix(uri, schemeName+":")
	if errs := Check(doc); len(errs) > 0 {
		return nil, fmt.Errorf("safeconfig: %s: %w", path, errors.Join(errs...))
	}
	envs := headerEnvs(doc)
	setsLists := setsServiceLists(doc)
	if len(envs) == 0 && !setsLists {
		return ret, nil
	}
	if len(envs) > 0 {
		doc[HeaderEnvKey] = envs
	}
	if setsLists {
		doc[ListFilesKey] = map[string]any{path: true}
	}
	return confmap.NewRetrieved(doc)
}

// setsServiceLists reports whether doc sets a list that a merge would replace:
// service::extensions or a pipeline's receivers, processors or exporters.
func setsServiceLists(doc map[string]any) bool {
	service, _ := doc["service"].(map[string]any)
	if _, ok := service["extensions"]; ok {
		return true
	}
	pipelines, _ := service["pipelines"].(map[string]any)
	for _, p := range pipelines {
		pm, _ := p.(map[string]any)
		for _, k := range []string{"receivers", "processors", "exporters"} {
			if _, ok := pm[k]; ok {
				return true
			}
		}
	}
	return false
}

func (*provider) Scheme() string { return schemeName }

func (p *provider) Shutdown(ctx context.Context) error { return p.upstream.Shutdown(ctx) }

// credentialHeader matches header names that carry a credential: Authorization,
// Proxy-Authorization, X-API-Key, DD-API-KEY, api_key, X-SF-Token, X-Insert-Key,
// X-Auth-Token, Cookie, ... Each word of the name is matched, so Content-Type or
// X-Scope-OrgID do not match.
var credentialHeader = regexp.MustCompile(`(?i)(^|[-_.])(authorization|auth|token|secret|password|passwd|credentials?|cookie|api[-_]?key|apikey|key|signature|session)([-_.]|$)|^x-honeycomb-team$`)

// secretKeys are config keys, anywhere in a document, whose value is a credential
// (prometheus basic_auth.password, authorization.credentials, oauth2.client_secret,
// a TLS key_pem, bearertokenauth's token...). Each has a *_file sibling upstream.
var secretKeys = map[string]bool{
	"password": true, "bearer_token": true, "credentials": true, "client_secret": true,
	"key_pem": true, "token": true, "api_key": true, "secret": true,
}

// authSchemeOnly is the literal text allowed around references in a credential
// header: nothing, or an auth scheme word such as "Bearer " or "Basic ".
var authSchemeOnly = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z0-9._-]*\s+)?$`)

// Check returns one error per literal credential in a raw (unexpanded) config
// document. Errors name the component and the field but never the value.
func Check(doc map[string]any) []error {
	var errs []error
	if exps, ok := doc["exporters"].(map[string]any); ok {
		for _, id := range sortedKeys(exps) {
			forEachHeader(exps[id], func(name string, value any) {
				if credentialHeader.MatchString(name) {
					if err := checkCredential(value, exporterEnvName(id, name)); err != nil {
						errs = append(errs, fmt.Errorf("exporters::%s: headers::%s %w", id, name, err))
					}
				}
			})
		}
	}
	walk(doc, "", func(path, key string, value any) {
		if !secretKeys[strings.ToLower(key)] || !isScalar(value) || isExporterHeader(path) {
			return // not a secret, a section that happens to be called "credentials", or checked above
		}
		if err := checkCredential(value, ""); err != nil {
			errs = append(errs, fmt.Errorf("%s %w", path, err))
		}
	})
	return errs
}

// checkCredential explains why value is not a safely sourced credential, or
// returns nil. envHint is the conventional variable name to suggest, if any.
func checkCredential(value any, envHint string) error {
	suggest := "${env:NAME} (from a Secret) or ${file:/path}"
	if envHint != "" {
		suggest = "${env:" + envHint + "} (from a Secret) or ${file:/path}"
	}
	s, ok := value.(string)
	if !ok {
		if value == nil {
			return nil
		}
		return fmt.Errorf("is a credential written as a literal value (value not shown): write %s instead", suggest)
	}
	refs, literal := scan(s)
	if len(refs) == 0 {
		if strings.TrimSpace(literal) == "" {
			return nil // empty: no credential to leak
		}
		return fmt.Errorf("is a credential written as a literal value (value not shown): write %s instead", suggest)
	}
	for _, r := range refs {
		switch {
		case r.scheme == "env" && r.hasDef && r.def != "":
			return fmt.Errorf("has a literal default in ${env:%s:-...} (value not shown): a default credential would sit in the config; remove the default", r.name)
		case r.scheme != "env" && r.scheme != "file":
			return fmt.Errorf("comes from ${%s:...}, which embeds the value in the config: use %s", r.scheme, suggest)
		}
	}
	if !authSchemeOnly.MatchString(literal) {
		return fmt.Errorf("mixes literal text with a reference (value not shown): only an auth scheme word such as \"Bearer \" may be literal; use %s", suggest)
	}
	return nil
}

// forEachHeader calls f for every header of an exporter config, in either form
// configopaque.MapList accepts: a map, or a list of {name, value}.
func forEachHeader(exporter any, f func(name string, value any)) {
	cfg, ok := exporter.(map[string]any)
	if !ok {
		return
	}
	switch hs := cfg["headers"].(type) {
	case map[string]any:
		for _, name := range sortedKeys(hs) {
			f(name, hs[name])
		}
	case []any:
		for _, item := range hs {
			if pair, ok := item.(map[string]any); ok {
				if name, ok := pair["name"].(string); ok {
					f(name, pair["value"])
				}
			}
		}
	}
}

// headerEnvs maps exporter id -> header name -> space-separated env variable names.
func headerEnvs(doc map[string]any) map[string]any {
	exps, ok := doc["exporters"].(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]any{}
	for id, cfg := range exps {
		headers := map[string]any{}
		forEachHeader(cfg, func(name string, value any) {
			s, ok := value.(string)
			if !ok {
				return
			}
			refs, _ := scan(s)
			var names []string
			for _, r := range refs {
				if r.scheme == "env" {
					names = append(names, r.name)
				}
			}
			if len(names) > 0 {
				headers[name] = strings.Join(names, " ")
			}
		})
		if len(headers) > 0 {
			out[id] = headers
		}
	}
	return out
}

// exporterEnvName is the conventional variable for a header of an exporter:
// OTEL_EXPORTER_<NAME>_<HEADER>, upper case, anything outside [A-Z0-9_] as "_".
func exporterEnvName(id, header string) string {
	name := id
	if _, n, ok := strings.Cut(id, "/"); ok {
		name = n
	}
	return "OTEL_EXPORTER_" + envSafe(name) + "_" + envSafe(header)
}

func envSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		default:
			return '_'
		}
	}, s)
}

func walk(v any, path string, f func(path, key string, value any)) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			p := k
			if path != "" {
				p = path + "::" + k
			}
			f(p, k, t[k])
			walk(t[k], p, f)
		}
	case []any:
		for i, item := range t {
			walk(item, fmt.Sprintf("%s[%d]", path, i), f)
		}
	}
}

// isExporterHeader reports whether path is exporters::<id>::headers::..., which the
// header rule already covers with a better message.
func isExporterHeader(path string) bool {
	parts := strings.SplitN(path, "::", 4)
	return len(parts) >= 3 && parts[0] == "exporters" && strings.HasPrefix(parts[2], "headers")
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
