// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// fill gives m every kind of value an OTLP attribute can hold, so that a
// decoder that kept a reference into its input would show it somewhere.
func fill(m pcommon.Map, i int) {
	m.PutStr("k8s.pod.name", fmt.Sprintf("fluent-bit-%05d", i))
	m.PutInt("seq", int64(i))
	m.PutDouble("ratio", float64(i)/3)
	m.PutBool("even", i%2 == 0)
	m.PutEmptyBytes("raw").FromRaw([]byte{0xde, 0xad, byte(i), 0xef})
	kube := m.PutEmptyMap("kubernetes")
	kube.PutStr("namespace_name", "audit")
	kube.PutEmptySlice("labels").AppendEmpty().SetStr("app=relay")
}

func sampleLogs(n int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "fluent-bit")
	rl.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("fluent-bit")
	for i := range n {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + int64(i)))
		lr.SetSeverityText("INFO")
		lr.SetTraceID(pcommon.TraceID{1, 2, 3, byte(i)})
		lr.SetSpanID(pcommon.SpanID{4, 5, byte(i)})
		lr.SetEventName("audit")
		body := lr.Body().SetEmptyMap()
		body.PutStr("log", fmt.Sprintf("GET /healthz 200 %d bytes from 10.0.%d.%d", 512+i, i/256, i%256))
		fill(lr.Attributes(), i)
	}
	return ld
}

func sampleMetrics() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	fill(rm.Resource().Attributes(), 1)
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("http_requests_total")
	m.SetDescription("requests")
	m.SetUnit("1")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for i := range 3 {
		dp := sum.DataPoints().AppendEmpty()
		dp.SetIntValue(int64(100 * i))
		fill(dp.Attributes(), i)
		ex := dp.Exemplars().AppendEmpty()
		ex.SetTraceID(pcommon.TraceID{9, byte(i)})
		ex.SetDoubleValue(1.5)
	}
	return md
}

func sampleTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	fill(rs.Resource().Attributes(), 2)
	for i := range 3 {
		s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetName(fmt.Sprintf("GET /v1/logs %d", i))
		s.SetTraceID(pcommon.TraceID{7, 7, byte(i)})
		s.SetSpanID(pcommon.SpanID{8, byte(i)})
		s.TraceState().FromRaw("vendor=relay")
		fill(s.Attributes(), i)
		fill(s.Events().AppendEmpty().Attributes(), i)
	}
	return td
}
