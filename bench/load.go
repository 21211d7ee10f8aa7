// SPDX-License-Identifier: Apache-2.0

package main

import (
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-relay/otelcol-relay/internal/e2e"
)

// fixtureNamespace is the namespace of otlpfixture.FluentBitLogs' pod.
const fixtureNamespace = "payments"

// encodeChunks is e2e.EncodeChunks with each request's pod in one of
// namespaces, in turn (chunkNamespace): with the fixture's namespace alone the
// requests are e2e.EncodeChunks' byte for byte. A namespace of another length
// changes a record's size, so the routed variants' second namespace (frontend)
// has payments' eight letters.
func encodeChunks(first int64, count, perChunk int, namespaces []string) []e2e.Chunk {
	if len(namespaces) == 1 && namespaces[0] == fixtureNamespace {
		return e2e.EncodeChunks(first, count, perChunk)
	}
	return e2e.EncodeChunksWith(first, count, perChunk, func(c e2e.Chunk, ld plog.Logs) {
		setNamespace(ld, chunkNamespace(c, namespaces))
	})
}

// chunkNamespace is the namespace of c's pod: the requests of a phase take
// namespaces in turn.
func chunkNamespace(c e2e.Chunk, namespaces []string) string {
	return namespaces[int(c.First/int64(c.N))%len(namespaces)]
}

// setNamespace puts every record of ld in namespace ns, on the resource (what
// a route reads) and in the body's kubernetes map, as fluent-bit would.
func setNamespace(ld plog.Logs, ns string) {
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		rl := ld.ResourceLogs().At(i)
		rl.Resource().Attributes().PutStr("k8s.namespace.name", ns)
		for j := 0; j < rl.ScopeLogs().Len(); j++ {
			lrs := rl.ScopeLogs().At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				if body := lrs.At(k).Body(); body.Type() == pcommon.ValueTypeMap {
					if kube, ok := body.Map().Get("kubernetes"); ok && kube.Type() == pcommon.ValueTypeMap {
						kube.Map().PutStr("namespace_name", ns)
					}
				}
			}
		}
	}
}

// namespaceIndex finds the namespace of any record of a run's chunks.
type namespaceIndex struct {
	chunks     []e2e.Chunk // sorted by First
	namespaces []string
}

func newNamespaceIndex(namespaces []string, phases ...[]e2e.Chunk) *namespaceIndex {
	x := &namespaceIndex{namespaces: namespaces}
	for _, p := range phases {
		x.chunks = append(x.chunks, p...)
	}
	sort.Slice(x.chunks, func(i, j int) bool { return x.chunks[i].First < x.chunks[j].First })
	return x
}

// of is the namespace of record seq, "" for a seq in no chunk.
func (x *namespaceIndex) of(seq int64) string {
	i := sort.Search(len(x.chunks), func(i int) bool { return x.chunks[i].First+int64(x.chunks[i].N) > seq })
	if i == len(x.chunks) || seq < x.chunks[i].First {
		return ""
	}
	return chunkNamespace(x.chunks[i], x.namespaces)
}
