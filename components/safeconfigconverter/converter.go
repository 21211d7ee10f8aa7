// Package safeconfigconverter is the confmap converter of otelcol-relay that turns
// structural exporter mistakes into startup errors. It runs after every --config
// file has been merged and expanded, so it sees the configuration the collector is
// about to run:
//
//   - TLS material (tls::ca_file, cert_file, ...) or a certwatch middleware on a
//     plaintext connection, where it would be silently ignored;
//   - a plaintext connection, or tls::insecure_skip_verify, on an exporter whose
//     name does not say so (otlp_http/plaintext-<name> is the explicit opt-in);
//   - any exporter tls:: field beside certwatch, which builds the TLS itself;
//   - an exporter naming a certwatch/<name> that is not configured, or not enabled in
//     service::extensions; a certwatch instance no exporter uses; certwatch not the
//     last middleware of an otlp_http exporter;
//   - two backends whose headers read the same environment variable (recorded as
//     written by components/safeconfigprovider under safeconfig.HeaderEnvKey);
//   - a backend exporter that no pipeline uses (what a second --config merged without
//     confmap.enableMergeAppendOption silently does to the first backend);
//   - persistent sending queues and durable_queue processors whose byte bounds
//     do not fit their file_storage / queue_storage volume (upstream's queue
//     loses acknowledged data on a full disk);
//   - a durable_queue processor that is not last in its pipeline, shares it
//     with a second exporter, or stands in front of an exporter whose own
//     sending_queue is enabled.
//
// Errors name the exporter and the field.
package safeconfigconverter // import "github.com/otelcol-relay/otelcol-relay/components/safeconfigconverter"

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/featuregate"

	"github.com/otelcol-relay/otelcol-relay/components/internal/safeconfig"
)

// plaintextPrefix starts the name of an exporter that is allowed to send in
// plaintext: otlp_grpc/plaintext-mesh. The choice is then visible in the config, the
// pipelines, every log line and every metric of that exporter.
const plaintextPrefix = "plaintext"

const certwatchType = "certwatch"

// backendTypes are the exporter types whose endpoints and credentials are checked
// (with the deprecated aliases, which still work upstream).
var backendTypes = map[string]string{
	"otlp_grpc": "grpc", "otlp": "grpc",
	"otlp_http": "http", "otlphttp": "http",
	// otlp_http_wire: otlp_http's confighttp client and configuration.
	"otlp_http_wire": "http",
}

// httpEndpointKeys are the endpoint fields of an otlp_http exporter.
var httpEndpointKeys = []string{"endpoint", "logs_endpoint", "metrics_endpoint", "traces_endpoint", "profiles_endpoint"}

// tlsMaterialKeys are tls:: fields that only mean something on a TLS connection.
var tlsMaterialKeys = []string{"ca_file", "ca_pem", "cert_file", "cert_pem", "key_file", "key_pem", "include_system_ca_certs_pool", "server_name_override"}

type converter struct{}

// NewFactory returns the factory of the safety converter.
func NewFactory() confmap.ConverterFactory {
	return confmap.NewConverterFactory(func(confmap.ConverterSettings) confmap.Converter { return converter{} })
}

func (converter) Convert(_ context.Context, conf *confmap.Conf) error {
	var envs map[string]any
	if conf.IsSet(safeconfig.HeaderEnvKey) {
		envs, _ = conf.Get(safeconfig.HeaderEnvKey).(map[string]any)
		// The record has done its job; the collector itself must never see it.
		conf.Delete(safeconfig.HeaderEnvKey)
	}
	var listFiles map[string]any
	if conf.IsSet(safeconfig.ListFilesKey) {
		listFiles, _ = conf.Get(safeconfig.ListFilesKey).(map[string]any)
		conf.Delete(safeconfig.ListFilesKey)
	}
	if err := checkListMerge(listFiles, mergeAppendEnabled()); err != nil {
		// Every other finding would only describe the damage the merge did.
		return fmt.Errorf("safeconfig: %w", err)
	}
	cfg := conf.ToStringMap()
	errs := append(check(cfg, envs), checkQueueVolumes(cfg, volumeSize)...)
	if len(errs) > 0 {
		return fmt.Errorf("safeconfig: %w", errors.Join(errs...))
	}
	return nil
}

// mergeAppendGate makes the resolver append lists from several --config files
// instead of letting the last file's list replace the others'.
const mergeAppendGate = "confmap.enableMergeAppendOption"

func mergeAppendEnabled() bool {
	on := false
	featuregate.GlobalRegistry().VisitAll(func(g *featuregate.Gate) {
		if g.ID() == mergeAppendGate {
			on = g.IsEnabled()
		}
	})
	return on
}

// checkListMerge refuses two config files that both set service lists when those
// lists would be replaced rather than appended: a backend fragment would silently
// take the default backend out of the logs pipeline (or its certwatch out of
// service::extensions).
func checkListMerge(listFiles map[string]any, appendOn bool) error {
	if appendOn || len(listFiles) < 2 {
		return nil
	}
	return fmt.Errorf("config files %s each set lists under service:: (extensions or pipeline receivers/processors/exporters), and without the %s feature gate the last file's lists replace the others' instead of adding to them: run with --feature-gates=%s", strings.Join(slices.Sorted(maps.Keys(listFiles)), ", "), mergeAppendGate, mergeAppendGate)
}

// check returns one error per rule violation in an expanded config. headerEnvs is
// safeconfigprovider's record (exporter id -> header -> env names), or nil.
func check(cfg map[string]any, headerEnvs map[string]any) []error {
	exporters := asMap(cfg["exporters"])
	extensions := asMap(cfg["extensions"])
	service := asMap(cfg["service"])
	enabled := map[string]bool{}
	for _, id := range asList(service["extensions"]) {
		if s, ok := id.(string); ok {
			enabled[s] = true
		}
	}

	var errs []error
	usedCertwatch := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(exporters)) {
		typ, name := splitID(id)
		proto, ok := backendTypes[typ]
		if !ok {
			continue
		}
		exp := asMap(exporters[id])
		errs = append(errs, checkTransport(id, name, proto, exp)...)
		mws := asList(exp["middlewares"])
		for i, mw := range mws {
			mwID, _ := asMap(mw)["id"].(string)
			if t, _ := splitID(mwID); t != certwatchType {
				continue
			}
			usedCertwatch[mwID] = true
			switch {
			case !hasKey(extensions, mwID):
				errs = append(errs, fmt.Errorf("exporters::%s: middlewares[%d]::id %q names a certwatch instance that is not configured under extensions", id, i, mwID))
			case !enabled[mwID]:
				errs = append(errs, fmt.Errorf("exporters::%s: middlewares[%d]::id %q is configured but not listed in service::extensions, so it never starts", id, i, mwID))
			}
			if proto == "http" && i != len(mws)-1 {
				errs = append(errs, fmt.Errorf("exporters::%s: middlewares[%d]::id %q must be the last middleware of an otlp_http exporter: only the last one receives the *http.Transport it configures", id, i, mwID))
			}
			errs = append(errs, checkCertwatchOverrides(id, exp, mwID, asMap(extensions[mwID]))...)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(extensions)) {
		if t, _ := splitID(id); t == certwatchType && !usedCertwatch[id] {
			errs = append(errs, fmt.Errorf("extensions::%s: no exporter uses it (no exporter lists {id: %s} in middlewares): a misspelt middleware id would otherwise leave its exporter without the intended certificates", id, id))
		}
	}
	errs = append(errs, checkEnvCollisions(exporters, headerEnvs)...)
	errs = append(errs, checkUnusedBackends(exporters, asMap(service["pipelines"]))...)
	errs = append(errs, checkDurableQueues(exporters, asMap(service["pipelines"]))...)
	return errs
}

// checkTransport enforces "TLS always on unless the name says otherwise", deciding
// TLS the way the exporter will:
//   - otlp_http (confighttp): the URL scheme alone; tls::insecure only makes it
//     skip the rest of its tls block.
//   - otlp_grpc (configgrpc v1.71.0, getGrpcDialOptions): TLS unless tls::insecure
//     is true with no CA, and an https:// endpoint turns it back on. Any other
//     scheme is a resolver target (dns:///, passthrough:///) or stripped (http://).
//   - certwatch replaces whatever the tls block says (checkCertwatchOverrides).
func checkTransport(id, name, proto string, exp map[string]any) []error {
	tlsCfg := asMap(exp["tls"])
	insecure := isTrue(tlsCfg["insecure"])
	certwatch := usesCertwatch(exp)
	var plain []string   // fields that make this exporter plaintext
	var tlsAnyway string // why tls::insecure does not turn TLS off
	hint := ""           // why a connection that looks plaintext is not
	switch proto {
	case "http":
		for _, k := range httpEndpointKeys {
			ep, _ := exp[k].(string)
			if ep == "" {
				continue
			}
			switch endpointScheme(ep) {
			case "http":
				plain = append(plain, fmt.Sprintf("%s %q", k, redact(ep)))
			case "https":
			default:
				return []error{fmt.Errorf("exporters::%s: %s %q must start with https:// (or http:// on an exporter named %s/%s-...)", id, k, redact(ep), typeOf(id), plaintextPrefix)}
			}
		}
		if insecure && len(plain) == 0 {
			tlsAnyway = "otlp_http uses TLS for every https:// endpoint"
		}
	case "grpc":
		ep, _ := exp["endpoint"].(string)
		scheme := endpointScheme(ep)
		switch {
		case !insecure:
			if scheme == "http" {
				hint = " (configgrpc decides from tls::insecure, not from an http:// endpoint)"
			}
		case certwatch:
		case scheme == "https":
			tlsAnyway = "configgrpc uses TLS for an https:// endpoint"
		case hasCA(tlsCfg):
			tlsAnyway = "configgrpc uses TLS when tls::ca_file or ca_pem is set"
		default:
			plain = append(plain, "tls::insecure true")
		}
	}
	optIn := strings.HasPrefix(name, plaintextPrefix)
	skipVerify := isTrue(tlsCfg["insecure_skip_verify"])
	var errs []error
	switch {
	case len(plain) > 0:
		what := strings.Join(plain, ", ")
		for _, k := range tlsMaterialKeys {
			if v, ok := tlsCfg[k]; ok && !isZero(v) {
				errs = append(errs, fmt.Errorf("exporters::%s: tls::%s is set but the connection is plaintext (%s), so it would be silently ignored: use an https:// endpoint", id, k, what))
			}
		}
		for i, mw := range asList(exp["middlewares"]) {
			if mwID, _ := asMap(mw)["id"].(string); strings.HasPrefix(mwID, certwatchType) {
				errs = append(errs, fmt.Errorf("exporters::%s: middlewares[%d]::id %q supplies TLS certificates but the connection is plaintext (%s), so they would be silently ignored: use an https:// endpoint", id, i, mwID, what))
			}
		}
		if !optIn {
			errs = append(errs, fmt.Errorf("exporters::%s: plaintext connection (%s): TLS is required; a plaintext hop must be an explicit choice, made by naming the exporter %s/%s-<name>", id, what, typeOf(id), plaintextPrefix))
		}
		return errs
	case tlsAnyway != "" && !certwatch:
		errs = append(errs, fmt.Errorf("exporters::%s: tls::insecure is true but the connection uses TLS anyway (%s); it only makes the exporter ignore the rest of its tls block: remove it", id, tlsAnyway))
	}
	// TLS from here on. Unverified TLS protects no more than plaintext against
	// anyone on the path, so it takes the same visible opt-in. With certwatch the
	// field is ignored, which checkCertwatchOverrides reports.
	switch {
	case skipVerify && !optIn && !certwatch:
		errs = append(errs, fmt.Errorf("exporters::%s: tls::insecure_skip_verify is true, so the backend's certificate is not verified and anyone on the path can read and alter the data and take its credentials: verify it (tls::ca_file, or a certwatch instance), or make the choice visible by naming the exporter %s/%s-<name>", id, typeOf(id), plaintextPrefix))
	case optIn && !skipVerify:
		errs = append(errs, fmt.Errorf("exporters::%s: the name says %q but the connection uses TLS%s: rename it so the name does not mislead", id, plaintextPrefix, hint))
	}
	return errs
}

// certwatchFields are the exporter tls:: fields certwatch has its own version of.
var certwatchFields = map[string]bool{
	"ca_file": true, "cert_file": true, "key_file": true, "include_system_ca_certs_pool": true,
	"server_name_override": true, "min_version": true,
}

// checkCertwatchOverrides rejects any exporter tls:: field on an exporter that
// uses certwatch: certwatch builds the TLS configuration itself (gRPC transport
// credentials, or the *http.Transport's TLSClientConfig and DialTLSContext), so
// the exporter's tls block is silently ignored. The files certwatch rotates get
// their own message: pointing the block at them suggests it would follow them.
func checkCertwatchOverrides(id string, exp map[string]any, mwID string, cw map[string]any) []error {
	tlsCfg := asMap(exp["tls"])
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(tlsCfg)) {
		v := tlsCfg[k]
		if isZero(v) {
			continue
		}
		if mine, _ := v.(string); (k == "ca_file" || k == "cert_file" || k == "key_file") && mine == cw[k] {
			errs = append(errs, fmt.Errorf("exporters::%s: tls::%s %q is the file %s rotates; the tls block is read once at start and would pin the old certificate: remove tls::%s and leave it to %s", id, k, mine, mwID, k, mwID))
			continue
		}
		instead := ""
		if certwatchFields[k] {
			instead = fmt.Sprintf(" (set %s on %s instead)", k, mwID)
		}
		errs = append(errs, fmt.Errorf("exporters::%s: tls::%s is set, but %s builds this exporter's TLS configuration itself and ignores it: remove tls::%s%s", id, k, mwID, k, instead))
	}
	return errs
}

func usesCertwatch(exp map[string]any) bool {
	for _, mw := range asList(exp["middlewares"]) {
		if mwID, _ := asMap(mw)["id"].(string); typeOf(mwID) == certwatchType {
			return true
		}
	}
	return false
}

func hasCA(tlsCfg map[string]any) bool {
	return !isZero(tlsCfg["ca_file"]) || !isZero(tlsCfg["ca_pem"])
}

// isTrue reads a boolean as the collector will: a YAML bool, or the string an
// ${env:...} reference left.
func isTrue(v any) bool {
	switch t := v.(type) {
	case bool:
		return t
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(t))
		return err == nil && b
	}
	return false
}

// checkEnvCollisions rejects two backends that read a header from the same
// variable: one Secret's credential would go to both, typically after a
// copy-pasted fragment. Exporters of one backend (otlp_grpc/x and otlp_http/x)
// may share.
func checkEnvCollisions(exporters, headerEnvs map[string]any) []error {
	type use struct{ id, header string }
	users := map[string][]use{}
	for _, id := range slices.Sorted(maps.Keys(headerEnvs)) {
		if !hasKey(exporters, id) { // overridden away by a later file
			continue
		}
		hs := asMap(headerEnvs[id])
		for _, h := range slices.Sorted(maps.Keys(hs)) {
			s, _ := hs[h].(string)
			for _, env := range strings.Fields(s) {
				users[env] = append(users[env], use{id, h})
			}
		}
	}
	var errs []error
	for _, env := range slices.Sorted(maps.Keys(users)) {
		us := users[env]
		backends := map[string]bool{}
		var where []string
		for _, u := range us {
			_, name := splitID(u.id)
			backends[name] = true
			where = append(where, fmt.Sprintf("exporters::%s: headers::%s", u.id, u.header))
		}
		if len(backends) > 1 {
			errs = append(errs, fmt.Errorf("environment variable %s is read by more than one backend (%s): each backend needs its own Secret-backed variable, named OTEL_EXPORTER_<NAME>_<HEADER>", env, strings.Join(where, "; ")))
		}
	}
	return errs
}

// checkUnusedBackends rejects a backend exporter that no pipeline sends to. Merging
// a backend fragment with a second --config replaces list values such as
// service::pipelines::logs::exporters unless the confmap.enableMergeAppendOption
// feature gate is on; this turns that silent loss of a backend into an error.
func checkUnusedBackends(exporters, pipelines map[string]any) []error {
	used := map[string]bool{}
	for _, p := range pipelines {
		for _, e := range asList(asMap(p)["exporters"]) {
			if s, ok := e.(string); ok {
				used[s] = true
			}
		}
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(exporters)) {
		if t, _ := splitID(id); backendTypes[t] != "" && !used[id] {
			errs = append(errs, fmt.Errorf("exporters::%s: no pipeline in service::pipelines sends to it; if it was added with a second --config, run with --feature-gates=confmap.enableMergeAppendOption so that pipeline exporter lists are appended, not replaced", id))
		}
	}
	return errs
}

func endpointScheme(ep string) string {
	if i := strings.Index(ep, "://"); i > 0 {
		return strings.ToLower(ep[:i])
	}
	return ""
}

// redact drops any user:password from an endpoint before it goes in an error.
func redact(ep string) string {
	u, err := url.Parse(ep)
	if err != nil || u.User == nil {
		return ep
	}
	u.User = url.User("REDACTED")
	return u.String()
}

func splitID(id string) (typ, name string) {
	typ, name, _ = strings.Cut(id, "/")
	return typ, name
}

func typeOf(id string) string { t, _ := splitID(id); return t }

func isZero(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case bool:
		return !t
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
