// SPDX-License-Identifier: Apache-2.0

package backendsconverter

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

var word = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)

// auth is a backend's client authentication through an upstream auth
// extension. Credentials come from files only (a Secret or a projected token
// mounted into the pod), which the extensions re-read when they change: a token
// in the config would sit in a ConfigMap. A credential from the environment is
// a header (`headers:`).
type auth struct {
	kind   string // "bearer_token" or "basic"
	fields map[string]any
}

var authFields = map[string]map[string]bool{
	"bearer_token": {"file": true, "scheme": true, "header": true},
	"basic":        {"username": true, "username_file": true, "password_file": true},
}

func parseAuth(where string, raw any) (*auth, []error) {
	m, ok := raw.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, []error{fmt.Errorf("%s: auth: want a map with one of bearer_token or basic, got %v", where, describe(raw))}
	}
	a := &auth{}
	var errs []error
	for k, v := range m {
		a.kind = k
		known, ok := authFields[k]
		if !ok {
			return nil, []error{fmt.Errorf("%s: auth: unknown kind %q (bearer_token, basic)", where, k)}
		}
		if a.fields, ok = v.(map[string]any); !ok {
			return nil, []error{fmt.Errorf("%s: auth::%s: want a map, got %T", where, k, v)}
		}
		for _, f := range slices.Sorted(maps.Keys(a.fields)) {
			if !known[f] {
				hint := ""
				if strings.Contains(f, "token") || strings.Contains(f, "password") {
					// The one mistake worth its own words: a literal credential.
					hint = "; credentials come from files (a mounted Secret), never from the config"
				}
				errs = append(errs, fmt.Errorf("%s: auth::%s::%s is not a field (fields: %s)%s", where, k, f, strings.Join(slices.Sorted(maps.Keys(known)), ", "), hint))
			}
		}
		for f, v := range a.fields {
			switch t := v.(type) {
			case int, int64, uint64, float64:
				// A numeric user name (Grafana Cloud's instance ID) read from
				// ${env:...} arrives as a number.
				a.fields[f] = fmt.Sprint(t)
			case string:
				if t == "" {
					errs = append(errs, fmt.Errorf("%s: auth::%s::%s is empty", where, k, f))
				}
			default:
				errs = append(errs, fmt.Errorf("%s: auth::%s::%s: want a string, got %T", where, k, f, v))
			}
		}
	}
	for _, f := range []string{"scheme", "header"} {
		if v, ok := a.fields[f].(string); ok && !word.MatchString(v) {
			// One word: anything after a space would be sent as (part of) the token.
			errs = append(errs, fmt.Errorf("%s: auth::%s::%s must be one word (letters, digits, '-')", where, a.kind, f))
		}
	}
	switch a.kind {
	case "bearer_token":
		if _, ok := a.fields["file"]; !ok {
			errs = append(errs, fmt.Errorf("%s: auth::bearer_token::file is required (the token's file, re-read when it changes)", where))
		}
	case "basic":
		if _, ok := a.fields["password_file"]; !ok {
			errs = append(errs, fmt.Errorf("%s: auth::basic::password_file is required", where))
		}
		_, u := a.fields["username"]
		_, uf := a.fields["username_file"]
		if u == uf {
			errs = append(errs, fmt.Errorf("%s: auth::basic: give one of username or username_file", where))
		}
	}
	return a, errs
}

// header is the request header the extension sets.
func (a *auth) header() string {
	if h, _ := a.fields["header"].(string); h != "" {
		return h
	}
	return "Authorization"
}

func (a *auth) extensionID(name string) string {
	if a.kind == "basic" {
		return "basicauth/" + name
	}
	return "bearertokenauth/" + name
}

// extension is the auth extension's config.
func (a *auth) extension() map[string]any {
	if a.kind == "basic" {
		return map[string]any{"client_auth": maps.Clone(a.fields)}
	}
	cfg := map[string]any{
		"filename": a.fields["file"],
		// A missing file (a Secret not mounted yet) fails the start after
		// 30 s with the file named, instead of sending without a token.
		"retry_on_failure":    map[string]any{"enabled": true, "max_retries": 30, "interval": "1s"},
		"wait_for_token_file": true,
	}
	for _, k := range []string{"scheme", "header"} {
		if v, ok := a.fields[k]; ok {
			cfg[k] = v
		}
	}
	return cfg
}

func describe(v any) string {
	if m, ok := v.(map[string]any); ok {
		return fmt.Sprintf("a map with %d keys (%s)", len(m), strings.Join(slices.Sorted(maps.Keys(m)), ", "))
	}
	return fmt.Sprintf("%T", v)
}
