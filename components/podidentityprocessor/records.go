// SPDX-License-Identifier: Apache-2.0

package podidentityprocessor

import (
	"context"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// removeRecordClaims removes the listed attributes from a log record's or a
// span's (its events', links') attributes. They are the client's word as
// much as the resource's are: the gateway lifts log record attributes into
// the resource, and backends show span attributes beside the resource's.
// The resource already holds what the connection decided, so nothing is lost;
// a value that disagrees with it, or that no pod confirmed, is counted as a
// resource claim is.
func (p *podIdentity) removeRecordClaims(ctx context.Context, res, attrs pcommon.Map) {
	attrs.RemoveIf(func(k string, claimed pcommon.Value) bool {
		if !p.listed[k] {
			return false
		}
		p.count(ctx, k, claimed, res)
		return true
	})
}
