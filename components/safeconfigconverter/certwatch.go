// SPDX-License-Identifier: Apache-2.0

package safeconfigconverter

import (
	"fmt"
	"maps"
	"slices"
)

const certwatchType = "certwatch"

// checkCertwatchWiring checks the certwatch middlewares of the backend
// exporters: each names a configured instance that service::extensions starts,
// comes last on an otlp_http exporter, and is the only source of the exporter's
// TLS (checkCertwatchOverrides). An instance no exporter uses is refused too,
// but for a server's (server: true), which no exporter may use.
func checkCertwatchWiring(exporters, extensions map[string]any, enabled map[string]bool) []error {
	var errs []error
	usedCertwatch := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(exporters)) {
		proto, ok := backendTypes[typeOf(id)]
		if !ok {
			continue
		}
		exp := asMap(exporters[id])
		mws := asList(exp["middlewares"])
		for i, mw := range mws {
			mwID, _ := asMap(mw)["id"].(string)
			if t, _ := splitID(mwID); t != certwatchType {
				continue
			}
			usedCertwatch[mwID] = true
			if isServerCertwatch(extensions[mwID]) {
				errs = append(errs, fmt.Errorf("exporters::%s: middlewares[%d]::id %q has server: true: it watches a server's certificates (the receivers') and would offer their keypair to the backend", id, i, mwID))
				continue
			}
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
		// A server's instance (the receivers') watches for expiry alone.
		if t, _ := splitID(id); t == certwatchType && !usedCertwatch[id] && !isServerCertwatch(extensions[id]) {
			errs = append(errs, fmt.Errorf("extensions::%s: no exporter uses it (no exporter lists {id: %s} in middlewares): a misspelt middleware id would otherwise leave its exporter without the intended certificates", id, id))
		}
	}
	return errs
}

// isServerCertwatch is whether a certwatch instance's config says server: true
// (components/certwatchextension: a server's files, watched for their expiry).
func isServerCertwatch(cfg any) bool {
	v, _ := asMap(cfg)["server"].(bool)
	return v
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
