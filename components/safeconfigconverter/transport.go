// SPDX-License-Identifier: Apache-2.0

package safeconfigconverter

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// plaintextPrefix starts the name of an exporter that is allowed to send in
// plaintext: otlp_grpc/plaintext-mesh. The choice is then visible in the config, the
// pipelines, every log line and every metric of that exporter.
const plaintextPrefix = "plaintext"

// httpEndpointKeys are the endpoint fields of an otlp_http exporter.
var httpEndpointKeys = []string{"endpoint", "logs_endpoint", "metrics_endpoint", "traces_endpoint", "profiles_endpoint"}

// tlsMaterialKeys are tls:: fields that only mean something on a TLS connection.
var tlsMaterialKeys = []string{"ca_file", "ca_pem", "cert_file", "cert_pem", "key_file", "key_pem", "include_system_ca_certs_pool", "server_name_override"}

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
