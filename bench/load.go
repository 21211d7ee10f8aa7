// SPDX-License-Identifier: Apache-2.0

package main

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

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

// loadShape is what a variant's run suffixes change of the load (variants.go):
// records per saturation request (0: 1,000) and the length of each record's
// log line (0: the fixture's).
type loadShape struct{ perRequest, bodyBytes int }

// phases is one shape's pre-encoded load: the steady phase's requests at rate
// records/s, then the saturation phase's, whose records take recordBytes of
// OTLP protobuf each on average.
type phases struct {
	steady, sat []e2e.Chunk
	rate        float64
	recordBytes float64
}

// defaultRecordBytes is about what a fixture record's protobuf takes: a shape
// with longer log lines sends fewer records, so that every shape moves about
// as many bytes in each phase, and lasts about as long.
const defaultRecordBytes = 1000

// encodePhases pre-encodes shape's load for steadyN and satN records (of the
// default shape: fewer of longer ones), the requests' pods in namespaces.
func encodePhases(sh loadShape, steadyN, satN int, namespaces []string) *phases {
	per, steadyPer := 1000, 100
	if sh.perRequest > 0 {
		per = sh.perRequest
	}
	p := &phases{rate: *steadyRate}
	if sh.bodyBytes > defaultRecordBytes {
		// Fewer records, and fewer a request: requests stay about 1 MB at
		// saturation, as fluent-bit's chunks (at most 2 MB) do, and under the
		// receiver's 8 MiB limit, which 1,000 records of 16 KiB are not.
		scale := float64(defaultRecordBytes) / float64(sh.bodyBytes)
		steadyN, satN, p.rate = int(float64(steadyN)*scale), int(float64(satN)*scale), p.rate*scale
		steadyPer = max(int(float64(steadyPer)*scale), 1)
		if sh.perRequest == 0 {
			per = max(int(float64(per)*scale), 1)
		}
	}
	steadyCount, satCount := max(steadyN/steadyPer, 1), max(satN/per, 10)
	if sh.bodyBytes == 0 {
		p.steady = encodeChunks(0, steadyCount, steadyPer, namespaces)
		p.sat = encodeChunks(int64(steadyCount*steadyPer), satCount, per, namespaces)
	} else {
		edit := func(c e2e.Chunk, ld plog.Logs) {
			if len(namespaces) > 1 || namespaces[0] != fixtureNamespace {
				setNamespace(ld, chunkNamespace(c, namespaces))
			}
			setLogLine(ld, sh.bodyBytes, c.First)
		}
		p.steady = e2e.EncodeChunksWith(0, steadyCount, steadyPer, edit)
		p.sat = e2e.EncodeChunksWith(int64(steadyCount*steadyPer), satCount, per, edit)
	}
	p.recordBytes = avgRecordBytes(p.sat[0])
	return p
}

// logWords are what a longer log line is made of: text that compresses about
// as a log does (gzip takes it to about a third), not a run of one letter.
var logWords = strings.Fields("GET POST /api/v1/orders /healthz user_id= trace_id= status=200 status=503 latency_ms= " +
	"upstream=payments-db retry=1 cache=miss cache=hit bytes= region=westeurope pod=checkout-7d9f8b6c5-x2x4z " +
	"error: timeout connecting to 10.0.3.17:5432 after 30s, giving up; attempt of")

// setLogLine makes each record's log line n bytes: its flow line, cut or
// followed by words chosen from the record's sequence number.
func setLogLine(ld plog.Logs, n int, first int64) {
	seq := first
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				body := lrs.At(k).Body()
				if body.Type() != pcommon.ValueTypeMap {
					continue
				}
				line, _ := body.Map().Get("log")
				var b strings.Builder
				b.Grow(n + 32)
				b.WriteString(line.Str())
				rng := rand.New(rand.NewPCG(uint64(seq), 1))
				for b.Len() < n {
					b.WriteByte(' ')
					b.WriteString(logWords[rng.IntN(len(logWords))])
					if rng.IntN(3) == 0 {
						b.WriteString(strconv.Itoa(rng.IntN(100000)))
					}
				}
				body.Map().PutStr("log", b.String()[:n])
				seq++
			}
		}
	}
}
