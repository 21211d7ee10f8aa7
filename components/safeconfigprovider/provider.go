// SPDX-License-Identifier: Apache-2.0

// Package safeconfigprovider is the `file:` confmap provider of otelcol-relay. It
// reads files exactly like upstream's fileprovider and then inspects each config
// document as written, before `${env:...}`/`${file:...}` are expanded, for the one
// mistake nothing later in the pipeline can see: a credential written literally
// into the config (and so into a ConfigMap).
//
// It also records, for every exporter header, which environment variables the
// value comes from, under the top-level key safeconfig.HeaderEnvKey. The collector
// merges that key across `--config` files exactly as it merges the headers
// themselves, and components/safeconfigconverter reads it (to find two backends sharing a
// credential variable) and deletes it before the config is unmarshalled. The two
// components are meant to be installed together; see README.md.
package safeconfigprovider // import "github.com/otelcol-relay/otelcol-relay/components/safeconfigprovider"

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"

	"github.com/otelcol-relay/otelcol-relay/components/internal/safeconfig"
)

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
	// The rules read the document as the collector will: "a::b" keys unflattened.
	seen, _ := safeconfig.Unflatten(doc).(map[string]any)
	var errs []error
	for _, p := range safeconfig.Ambiguous(doc) {
		errs = append(errs, fmt.Errorf("%s is written more than once (nested and as a flat \"::\" key), and the collector keeps only one of them: write it once", p))
	}
	if errs = append(errs, check(seen)...); len(errs) > 0 {
		return nil, fmt.Errorf("safeconfig: %s: %w", path, errors.Join(errs...))
	}
	envs := headerEnvs(seen)
	setsLists := setsServiceLists(seen)
	if len(envs) == 0 && !setsLists {
		return ret, nil
	}
	if len(envs) > 0 {
		doc[safeconfig.HeaderEnvKey] = envs
	}
	if setsLists {
		doc[safeconfig.ListFilesKey] = map[string]any{path: true}
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
// X-Scope-OrgID do not match. It also names credential query parameters.
var credentialHeader = regexp.MustCompile(`(?i)(^|[-_.])(authorization|auth|token|secret|password|passwd|credentials?|cookie|api[-_]?key|apikey|key|signature|session)([-_.]|$)|^x-honeycomb-team$`)

// credentialParam adds the short query parameter names of signed URLs (Azure
// SAS "sig") to credentialHeader.
var credentialParam = regexp.MustCompile(`(?i)^(sig|pwd)$`)

// secretKeys are config keys, anywhere in a document, whose value is a credential
// (prometheus basic_auth.password, authorization.credentials, oauth2.client_secret,
// a TLS key_pem, bearertokenauth's token...). Each has a *_file sibling upstream.
var secretKeys = map[string]bool{
	"password": true, "bearer_token": true, "credentials": true, "client_secret": true,
	"key_pem": true, "token": true, "api_key": true, "secret": true,
	"tokens":   true, // bearertokenauth's list
	"hmac_key": true, // redaction's hash key
}

// authScheme is the literal text allowed before the references of a credential
// header: nothing, or one known auth scheme word followed by a space. Any other
// word could be (part of) the credential itself.
var authScheme = regexp.MustCompile(`(?i)^\s*((basic|bearer|digest|negotiate|oauth|apikey|api-key|api-token|token|dsn|splunk|genie-?key|ssws)\s+)?$`)

// check returns one error per literal credential in a raw (unexpanded) config
// document. Errors name the component and the field but never the value.
func check(doc map[string]any) []error {
	var errs []error
	walk(doc, "", func(path, key string, value any) {
		// Any case: a key the component does not know is refused when it is
		// unmarshalled, but the credential is named here first.
		switch {
		case key == "":
			// a list element: its list's key decides
		case strings.EqualFold(key, "headers"):
			errs = append(errs, checkHeaders(path, key, value)...)
		case strings.EqualFold(key, "http_headers"):
			errs = append(errs, checkHTTPHeaders(path, value)...)
		case underHeaders(path):
			// a header's own name or fields: checked above, with its name
		case secretKeys[strings.ToLower(key)], strings.EqualFold(parentKey(path), "params") && isCredentialParam(key):
			errs = append(errs, checkValues(path, value)...)
		}
	})
	walk(doc, "", func(path, _ string, value any) {
		if s, ok := value.(string); ok {
			errs = append(errs, checkURL(path, s)...)
		}
	})
	return append(errs, checkRecordProcessing(doc)...)
}

// checkHeaders checks a headers map or list (path ends in key, "headers" in
// any case). An exporter's errors suggest its conventional variable.
func checkHeaders(path, key string, headers any) []error {
	owner := strings.TrimSuffix(path, "::"+key)
	id := ""
	if parts := strings.Split(owner, "::"); len(parts) == 2 && parts[0] == "exporters" {
		id = parts[1]
	}
	var errs []error
	forEachHeader(headers, func(name string, value any) {
		if !credentialHeader.MatchString(name) {
			return
		}
		hint := ""
		if id != "" {
			hint = safeconfig.ExporterEnvName(id, name)
		}
		if err := checkCredential(value, hint); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s::%s %w", owner, key, name, err))
		}
	})
	return errs
}

// checkHTTPHeaders checks Prometheus' http_headers: {Name: {values: [...],
// secrets: [...], files: [...]}}. secrets are credentials whatever the name;
// values are when the name says so.
func checkHTTPHeaders(path string, headers any) []error {
	hs, _ := headers.(map[string]any)
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(hs)) {
		h, _ := hs[name].(map[string]any)
		if credentialHeader.MatchString(name) {
			errs = append(errs, checkValues(path+"::"+name+"::values", h["values"])...)
		}
		errs = append(errs, checkValues(path+"::"+name+"::secrets", h["secrets"])...)
	}
	return errs
}

// checkValues checks a credential value, or each element of a list of them.
func checkValues(path string, value any) []error {
	var errs []error
	switch v := value.(type) {
	case map[string]any:
		// a section that happens to be called "credentials"
	case []any:
		for i, item := range v {
			if isScalar(item) {
				if err := checkCredential(item, ""); err != nil {
					errs = append(errs, fmt.Errorf("%s[%d] %w", path, i, err))
				}
			}
		}
	default:
		if err := checkCredential(value, ""); err != nil {
			errs = append(errs, fmt.Errorf("%s %w", path, err))
		}
	}
	return errs
}

// checkURL refuses a URL that carries a literal credential: a password in its
// userinfo (Go sends it as Basic auth on every request) or a credential query
// parameter. References are masked before parsing so ${env:...} parts are
// checked as references; a literal ${env:X:-default} is checked too.
func checkURL(path, s string) []error {
	if !strings.Contains(s, "://") {
		return nil
	}
	var errs []error
	refs, _ := safeconfig.Scan(s)
	for _, r := range refs {
		if r.HasDef {
			errs = append(errs, checkURL(path, r.Def)...)
		}
	}
	masked, orig := safeconfig.MaskRefs(s)
	u, err := url.Parse(masked)
	if err != nil {
		return errs // not a URL
	}
	if pw, ok := u.User.Password(); ok {
		if err := checkCredential(safeconfig.Unmask(pw, orig), ""); err != nil {
			errs = append(errs, fmt.Errorf("%s has a password in its userinfo, which Go sends as Basic auth: the password %w", path, err))
		}
	}
	q := u.Query()
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if !isCredentialParam(name) {
			continue
		}
		for _, v := range q[name] {
			if err := checkCredential(safeconfig.Unmask(v, orig), ""); err != nil {
				errs = append(errs, fmt.Errorf("%s has a credential in its query parameter %s: the value %w", path, name, err))
				break
			}
		}
	}
	return errs
}

func isCredentialParam(name string) bool {
	return credentialHeader.MatchString(name) || credentialParam.MatchString(name)
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
	refs, literal := safeconfig.Scan(s)
	if len(refs) == 0 {
		if strings.TrimSpace(literal) == "" {
			return nil // empty: no credential to leak
		}
		return fmt.Errorf("is a credential written as a literal value (value not shown): write %s instead", suggest)
	}
	for _, r := range refs {
		switch {
		case r.Scheme == "env" && r.HasDef && r.Def != "":
			return fmt.Errorf("has a literal default in ${env:%s:-...} (value not shown): a default credential would sit in the config; remove the default", r.Name)
		case r.Scheme != "env" && r.Scheme != "file":
			return fmt.Errorf("comes from ${%s:...}, which embeds the value in the config: use %s", r.Scheme, suggest)
		}
	}
	// The literal text may only be a scheme word in front of the references.
	word := strings.TrimSpace(literal)
	if !authScheme.MatchString(literal) || !strings.HasPrefix(strings.TrimSpace(s), word) {
		return fmt.Errorf("mixes literal text with a reference (value not shown): only an auth scheme word such as \"Bearer \" may be literal; use %s", suggest)
	}
	return nil
}

// forEachHeader calls f for every header in a headers value, in either form
// configopaque.MapList accepts: a map, or a list of {name, value}. The list form
// of headers_setter ({key, value, default_value}) is read too.
func forEachHeader(headers any, f func(name string, value any)) {
	switch hs := headers.(type) {
	case map[string]any:
		for _, name := range slices.Sorted(maps.Keys(hs)) {
			f(name, hs[name])
		}
	case []any:
		for _, item := range hs {
			pair, ok := item.(map[string]any)
			if !ok {
				continue
			}
			name, ok := pair["name"].(string)
			if !ok {
				name, ok = pair["key"].(string)
			}
			if !ok {
				continue
			}
			f(name, pair["value"])
			if d, ok := pair["default_value"]; ok {
				f(name, d)
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
		exp, _ := cfg.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(exp)) {
			if strings.EqualFold(k, "headers") {
				recordHeaderEnvs(exp[k], headers)
			}
		}
		if len(headers) > 0 {
			out[id] = headers
		}
	}
	return out
}

// recordHeaderEnvs adds to record, for each header of a headers value, the
// variables its value reads.
func recordHeaderEnvs(hs any, record map[string]any) {
	forEachHeader(hs, func(name string, value any) {
		s, ok := value.(string)
		if !ok {
			return
		}
		refs, _ := safeconfig.Scan(s)
		var names []string
		for _, r := range refs {
			if r.Scheme == "env" {
				names = append(names, r.Name)
			}
		}
		if len(names) > 0 {
			record[name] = strings.Join(names, " ")
		}
	})
}

// walk calls f for every value in v, depth first, with its path: for a map
// entry with its key, for a list element with key "".
func walk(v any, path string, f func(path, key string, value any)) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			p := k
			if path != "" {
				p = path + "::" + k
			}
			f(p, k, t[k])
			walk(t[k], p, f)
		}
	case []any:
		for i, item := range t {
			p := fmt.Sprintf("%s[%d]", path, i)
			if path == safeconfig.BackendsKey {
				// backendsconverter names its entries so: the name is the backend's.
				if name, _ := asMap(item)["name"].(string); name != "" {
					p += " (" + name + ")"
				}
			}
			f(p, "", item)
			walk(item, p, f)
		}
	}
}

// underHeaders reports whether path lies inside a headers or http_headers
// section, which the header rules cover with the header's name.
func underHeaders(path string) bool {
	parts := strings.Split(path, "::")
	for _, p := range parts[:len(parts)-1] {
		if p, _, _ = strings.Cut(p, "["); strings.EqualFold(p, "headers") || strings.EqualFold(p, "http_headers") {
			return true
		}
	}
	return false
}

// parentKey is the key that holds path's last element ("params" for
// ...::params::api_key).
func parentKey(path string) string {
	parts := strings.Split(path, "::")
	if len(parts) < 2 {
		return ""
	}
	p, _, _ := strings.Cut(parts[len(parts)-2], "[")
	return p
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
