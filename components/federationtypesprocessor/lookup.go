// SPDX-License-Identifier: Apache-2.0

package federationtypesprocessor

import (
	"strings"

	"github.com/prometheus/common/model"
)

// role is what one gauge metric turns out to be once its family is known.
type role uint8

const (
	roleNone      role = iota // no metadata: left alone
	roleGauge                 // a real gauge (or unknown type): left alone, documented
	roleAmbiguous             // targets disagree on the type: left alone
	roleCounter               // becomes a monotonic cumulative Sum in place
	roleBucket                // <family>_bucket{le} of a histogram
	roleSum                   // <family>_sum of a histogram or summary
	roleCount                 // <family>_count of a histogram or summary
	roleQuantile              // <family>{quantile} of a summary
)

// lookup tells the role of the series name, the family it belongs to and the
// family's metadata. An exact match wins, as in Prometheus itself; then the
// histogram and summary suffixes; then a counter written as <family>_total
// (OpenMetrics names the family without the suffix).
func (s *metadataSnapshot) lookup(name string) (role, string, familyMeta) {
	m, exact := s.families[name]
	if exact && m.typ != model.MetricTypeUnknown {
		if m.ambiguous {
			return roleAmbiguous, name, m
		}
		switch m.typ {
		case model.MetricTypeCounter:
			return roleCounter, name, m
		case model.MetricTypeSummary:
			return roleQuantile, name, m
		case model.MetricTypeGauge:
			return roleGauge, name, m
		default:
			return roleNone, name, m
		}
	}
	for _, sfx := range [...]struct {
		suffix string
		role   role
	}{{"_bucket", roleBucket}, {"_sum", roleSum}, {"_count", roleCount}, {"_total", roleCounter}} {
		base, ok := strings.CutSuffix(name, sfx.suffix)
		if !ok || base == "" {
			continue
		}
		fm, ok := s.families[base]
		if !ok {
			continue
		}
		if fm.ambiguous {
			return roleAmbiguous, base, fm
		}
		switch {
		case fm.typ == model.MetricTypeHistogram && sfx.role != roleCounter:
			return sfx.role, base, fm
		case fm.typ == model.MetricTypeSummary && (sfx.role == roleSum || sfx.role == roleCount):
			return sfx.role, base, fm
		case fm.typ == model.MetricTypeCounter && sfx.role == roleCounter:
			// The metric keeps its own name; only the type changes.
			return roleCounter, name, fm
		}
		return roleNone, base, fm
	}
	if exact {
		if m.ambiguous {
			return roleAmbiguous, name, m
		}
		return roleGauge, name, m
	}
	return roleNone, name, familyMeta{}
}
