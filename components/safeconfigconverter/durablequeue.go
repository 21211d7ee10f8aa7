// SPDX-License-Identifier: Apache-2.0

package safeconfigconverter

import (
	"fmt"
	"maps"
	"slices"
)

// checkDurableQueues enforces where a durable_queue processor may stand. It
// deletes a request from disk when the rest of the pipeline returns, so:
//   - it must be the last processor: one after it could hold or drop data the
//     queue already counts as delivered;
//   - its pipeline must have one exporter: in front of two it waits for the
//     slower, and one backend down would stall the other;
//   - that exporter's own sending_queue must be disabled: an in-memory queue
//     returns as soon as it holds the request, and a crash would lose what
//     durable_queue had deleted.
func checkDurableQueues(exporters, pipelines map[string]any) []error {
	var errs []error
	for _, pid := range slices.Sorted(maps.Keys(pipelines)) {
		p := asMap(pipelines[pid])
		procs := asList(p["processors"])
		for i, v := range procs {
			id, _ := v.(string)
			if typeOf(id) != durableQueueType {
				continue
			}
			if i != len(procs)-1 {
				errs = append(errs, fmt.Errorf("service::pipelines::%s: processor %s must be the last processor (it is followed by %v): it forgets a request once the rest of the pipeline returns", pid, id, procs[i+1:]))
			}
			exps := asList(p["exporters"])
			if len(exps) != 1 {
				errs = append(errs, fmt.Errorf("service::pipelines::%s: processor %s needs exactly one exporter in its pipeline, found %d: give each backend its own pipeline and durable_queue instance, or one backend down stalls the others", pid, id, len(exps)))
			}
			for _, e := range exps {
				eid, _ := e.(string)
				if backendTypes[typeOf(eid)] == "" {
					continue // not an exporterhelper queue we know the default of
				}
				q := asMap(asMap(exporters[eid])["sending_queue"])
				if q["enabled"] != false {
					errs = append(errs, fmt.Errorf("exporters::%s: sending_queue::enabled must be false behind processor %s (pipeline %s): an in-memory queue would acknowledge requests that durable_queue then deletes from disk", eid, id, pid))
				}
			}
		}
	}
	return errs
}
