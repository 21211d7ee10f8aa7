// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/otelcol-relay/otelcol-relay/internal/otlpfixture"
)

// TestSinkDecodesZstd: the harness's sink accepts what an exporter configured
// with compression: zstd sends, although otlpfixture itself knows only gzip.
func TestSinkDecodesZstd(t *testing.T) {
	s := NewSink(t, otlpfixture.SinkOptions{})
	raw, err := plogotlp.NewExportRequestFromLogs(otlpfixture.FluentBitLogs(3, 0)).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := zstd.NewWriter(nil)
	body := zw.EncodeAll(raw, nil)
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+s.HTTPAddr+"/v1/logs", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "zstd")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || s.LogRecordCount() != 3 {
		t.Fatalf("zstd request: status %d, %d records arrived, want 200 and 3", resp.StatusCode, s.LogRecordCount())
	}
}
