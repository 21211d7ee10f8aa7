// SPDX-License-Identifier: Apache-2.0

package attributestoresourceprocessor

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"

	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// benchInputs are 1,000-record requests as the gateway receives them.
func benchInputs() []struct {
	name string
	ld   plog.Logs
} {
	return []struct {
		name string
		ld   plog.Logs
	}{
		// deploy/fluent-bit's chunk: pod identity on the records, one ResourceLogs
		// and one empty scope. A chunk of the tail input is one container's file.
		{"chunk-1pod", otlpfixture.FluentBitChunkLogs(1000, 0)},
		// The same with records of 8 pods interleaved: the worst case for moving.
		{"chunk-8pods", chunkOfPods(1000, 8)},
		// What bench/ sends (internal/e2e.EncodeChunks): identity already on the
		// resource, none of the keys on the records.
		{"resource-identity", otlpfixture.FluentBitLogs(1000, 0)},
	}
}

func chunkOfPods(n, pods int) plog.Logs {
	ld := otlpfixture.FluentBitChunkLogs(n, 0)
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	for i := range lrs.Len() {
		a := lrs.At(i).Attributes()
		p := i % pods
		a.PutStr("k8s.pod.name", fmt.Sprintf("checkout-7d9f8b6c5-%05d", p))
		a.PutStr("k8s.pod.uid", fmt.Sprintf("6f1c2a3e-9b7d-4c1e-8f2a-%012d", p))
	}
	return ld
}

// BenchmarkProcessLogs compares this processor with upstream's groupbyattrs,
// interleaved per input, through the component (processorhelper included) as
// the pipeline calls it. ns/op, B/op and allocs/op are per 1,000-record request.
//
//	go test ./components/attributestoresourceprocessor -run '^$' -bench . -benchmem -count 5
func BenchmarkProcessLogs(b *testing.B) {
	for _, in := range benchInputs() {
		for _, impl := range []struct {
			name string
			new  func(testing.TB, []string, consumer.Logs) processor.Logs
		}{{"attributes_to_resource", newOurs}, {"groupbyattrs", newUpstream}} {
			b.Run(in.name+"/"+impl.name, func(b *testing.B) {
				p := impl.new(b, podKeys, consumertest.NewNop())
				work := plog.NewLogs()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					in.ld.CopyTo(work) // each run consumes (moves) its input
					b.StartTimer()
					require.NoError(b, p.ConsumeLogs(context.Background(), work))
				}
			})
		}
	}
}
