// SPDX-License-Identifier: Apache-2.0

package backendsconverter

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// signalTypes are the pipeline types a backend can receive.
var signalTypes = map[string]bool{"logs": true, "metrics": true, "traces": true}

// namespaceKey is the resource attribute a namespace route reads. By the time a
// record reaches a backend's pipeline it was set from the pod the record was
// associated with (pod_identity on the agent, k8s_attributes on the gateway),
// never from a record attribute the sender wrote.
const namespaceKey = "k8s.namespace.name"

// route selects what a backend receives, by the resource of each record.
type route struct {
	namespaces []string
	condition  string // an OTTL condition on the resource
}

var routeKeys = map[string]bool{"namespaces": true, "condition": true}

func parseRoute(where string, raw any) (*route, []error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, []error{fmt.Errorf("%s: route: want a map with namespaces and/or condition, got %T", where, raw)}
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !routeKeys[k] {
			errs = append(errs, fmt.Errorf("%s: route: unknown field %q (fields: condition, namespaces)", where, k))
		}
	}
	r := &route{}
	var err error
	if r.namespaces, err = stringList(m["namespaces"]); err != nil {
		errs = append(errs, fmt.Errorf("%s: route: namespaces: %w", where, err))
	}
	for _, ns := range r.namespaces {
		if !dnsLabel.MatchString(ns) || len(ns) > 63 {
			errs = append(errs, fmt.Errorf("%s: route: namespaces: %q is not a namespace name (a DNS label)", where, ns))
		}
	}
	if c, ok := m["condition"]; ok {
		s, isString := c.(string)
		switch {
		case !isString:
			errs = append(errs, fmt.Errorf("%s: route: condition: want an OTTL condition on the resource (a string), got %T", where, c))
		case strings.TrimSpace(s) == "":
			errs = append(errs, fmt.Errorf("%s: route: condition is empty", where))
		}
		r.condition = s
	}
	if len(r.namespaces) == 0 && r.condition == "" && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: route selects nothing: give namespaces or a condition (or remove route to receive everything)", where))
	}
	return r, errs
}

// keepCondition is the OTTL condition on the resource that a record must meet
// to reach the backend: a listed namespace, or the route's own condition.
func (r *route) keepCondition() string {
	var terms []string
	for _, ns := range r.namespaces {
		// A DNS label needs no escaping; Quote keeps it a string literal anyway.
		terms = append(terms, fmt.Sprintf("resource.attributes[%q] == %s", namespaceKey, strconv.Quote(ns)))
	}
	if r.condition != "" {
		terms = append(terms, "("+r.condition+")")
	}
	return strings.Join(terms, " or ")
}

// filterConfig is the filter processor that drops, for every signal, what the
// route does not select. Errors in the condition keep the record (ignore): a
// record the route cannot judge goes to the backend rather than nowhere.
func (r *route) filterConfig() map[string]any {
	drop := []any{"not (" + r.keepCondition() + ")"}
	cfg := map[string]any{"error_mode": "ignore"}
	for sig := range signalTypes {
		cfg[sig] = map[string]any{"resource": slices.Clone(drop)}
	}
	return cfg
}

// ownPipeline reports whether the backend needs a pipeline of its own: a
// route or processing that the other backends must not see.
func (b *backend) ownPipeline() bool { return b.route != nil || len(b.processors) > 0 }

func (b *backend) routeFilterID() string { return "filter/route-" + b.name }

// pipelineType is the signal of a pipeline id ("logs", "metrics/federation").
func pipelineType(id string) string {
	t, _, _ := strings.Cut(id, "/")
	return t
}

// forwardID names the connector that carries shared pipeline p's output to the
// backends with a pipeline of their own.
func forwardID(p string) string { return "forward/" + strings.ReplaceAll(p, "/", "-") }

// backendPipelineID is backend b's own pipeline fed from shared pipeline p.
func (b *backend) backendPipelineID(p string) string {
	t, name, _ := strings.Cut(p, "/")
	if name != "" {
		return t + "/" + name + "-backend-" + b.name
	}
	return t + "/backend-" + b.name
}
