// SPDX-License-Identifier: Apache-2.0

package otlpfixture

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
)

// FluentBitLogs builds n log records shaped like what fluent-bit's opentelemetry
// output sends after the kubernetes filter: pod identity as resource attributes, a
// map body with the log line and a kubernetes map, and SeqAttr = first..first+n-1.
// Each record is about 1 KB on the wire.
func FluentBitLogs(n int, first int64) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	res := rl.Resource().Attributes()
	res.PutStr("service.name", "flows")
	res.PutStr("k8s.namespace.name", "payments")
	res.PutStr("k8s.pod.name", "checkout-7d9f8b6c5-x2x4z")
	res.PutStr("k8s.container.name", "checkout")
	sl := rl.ScopeLogs().AppendEmpty()
	base := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		seq := first + int64(i)
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(seq) * time.Millisecond)))
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(seq)*time.Millisecond + time.Microsecond)))
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		lr.SetSeverityText("INFO")
		lr.Attributes().PutInt(SeqAttr, seq)
		lr.Attributes().PutStr("stream", "stdout")
		body := lr.Body().SetEmptyMap()
		body.PutStr("log", fmt.Sprintf(
			"%s flow src=10.244.1.17:53412 dst=10.96.0.10:53 proto=udp action=allow policy=default.allow-dns bytes_in=%d bytes_out=%d packets=%d seq=%d %s",
			base.Add(time.Duration(seq)*time.Millisecond).Format(time.RFC3339Nano), 120+seq%400, 88+seq%300, 2+seq%7, seq, padding))
		k := body.PutEmptyMap("kubernetes")
		k.PutStr("pod_name", "checkout-7d9f8b6c5-x2x4z")
		k.PutStr("namespace_name", "payments")
		k.PutStr("pod_id", "6f1c2a3e-9b7d-4c1e-8f2a-0d3b5e6a7c81")
		k.PutStr("host", "aks-nodepool1-12345678-vmss000002")
		k.PutStr("container_name", "checkout")
		k.PutStr("docker_id", "3b1f9c0e2d4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c")
		k.PutStr("container_image", "registry.example.com/payments/checkout:1.42.7")
		labels := k.PutEmptyMap("labels")
		labels.PutStr("app", "checkout")
		labels.PutStr("pod-template-hash", "7d9f8b6c5")
		labels.PutStr("app.kubernetes.io/part-of", "payments")
	}
	return ld
}

// FluentBitChunkLogs builds n records exactly as deploy/fluent-bit's config sends a
// chunk of short container log lines: one ResourceLogs with no resource attributes
// and an empty scope (fluent-bit's plain records), the log line as a string body,
// and pod identity and stream as record attributes (logs_body_key_attributes).
// A 2 MB fluent-bit chunk of such lines holds up to ~24,000 records.
func FluentBitChunkLogs(n int, first int64) plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	lrs.EnsureCapacity(n)
	base := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		seq := first + int64(i)
		lr := lrs.AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(seq) * time.Millisecond)))
		lr.Body().SetStr(fmt.Sprintf("GET /healthz 200 %dus seq=%d", 100+seq%900, seq))
		a := lr.Attributes()
		a.PutInt(SeqAttr, seq)
		a.PutStr("stream", "stdout")
		a.PutStr("k8s.pod.name", "checkout-7d9f8b6c5-x2x4z")
		a.PutStr("k8s.namespace.name", "payments")
		a.PutStr("k8s.pod.uid", "6f1c2a3e-9b7d-4c1e-8f2a-0d3b5e6a7c81")
		a.PutStr("k8s.container.name", "checkout")
	}
	return ld
}

// padding brings a FluentBitLogs record to about 1 KB, the size the benchmark
// targets are quoted for.
var padding = strings.Repeat("x", 420)

// Encoding selects how an HTTP export request is encoded.
type Encoding struct {
	JSON bool
	Gzip bool
}

// EncodeLogs encodes ld as an OTLP/HTTP request body and returns it with its
// Content-Type and Content-Encoding.
func EncodeLogs(ld plog.Logs, enc Encoding) (body []byte, contentType, contentEncoding string, err error) {
	req := plogotlp.NewExportRequestFromLogs(ld)
	if enc.JSON {
		body, err = req.MarshalJSON()
		contentType = "application/json"
	} else {
		body, err = req.MarshalProto()
		contentType = "application/x-protobuf"
	}
	if err != nil || !enc.Gzip {
		return body, contentType, "", err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err = zw.Write(body); err == nil {
		err = zw.Close()
	}
	return buf.Bytes(), contentType, "gzip", err
}

// SendLogsGRPC exports ld over an existing connection.
func SendLogsGRPC(ctx context.Context, cc *grpc.ClientConn, ld plog.Logs) error {
	_, err := plogotlp.NewGRPCClient(cc).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
	return err
}
