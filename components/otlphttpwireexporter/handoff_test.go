// SPDX-License-Identifier: Apache-2.0

package otlphttpwireexporter

import (
	"context"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/otelcol-relay/otelcol-relay/components/internal/handoff"
	"github.com/otelcol-relay/otelcol-relay/components/otlphttpwireexporter/internal/metadata"
	"github.com/otelcol-relay/otelcol-relay/components/queuestorageextension/queuestoragetest"
)

// On queue_storage, the exporter finds the storage's handoff at start and
// Marshal gives it every item it returns: the item it made at intake and a
// new one (a merged request), so that the store keeps neither as a copy.
func TestItemsAreHandedOffToQueueStorage(t *testing.T) {
	b := newBackend(t)
	cfg := wireConfig(b)
	cfg.QueueConfig = persistentQueue()
	host, _ := queuestoragetest.Start(t, t.TempDir())
	u, err := url.Parse(b.srv.URL)
	require.NoError(t, err)
	e := newWireExporter(cfg, exportertest.NewNopSettings(metadata.Type), logsSignal, u)
	require.NoError(t, e.start(context.Background(), host))
	reg := host.GetExtensions()[storageID].(handoff.Provider).Handoff()
	require.Same(t, reg, e.handoff.Load(), "the exporter did not take queue_storage's handoff")

	enc := queueEncoding{sig: logsSignal, handoff: &e.handoff}
	ctx := client.NewContext(context.Background(), client.Info{Metadata: client.NewMetadata(map[string][]string{"tenant": {"a"}})})
	r1, err := logsRequest(ctx, makeLogs(0, 10))
	require.NoError(t, err)
	item, err := enc.Marshal(ctx, r1)
	require.NoError(t, err)
	require.True(t, reg.Claim(item), "the item made at intake was not given")

	r2, err := logsRequest(ctx, makeLogs(10, 10))
	require.NoError(t, err)
	merged, err := r1.MergeSplit(ctx, 0, exporterhelper.RequestSizerTypeItems, r2)
	require.NoError(t, err)
	require.Len(t, merged, 1)
	item, err = enc.Marshal(ctx, merged[0])
	require.NoError(t, err)
	require.True(t, reg.Claim(item), "a new item was not given")
}

// Without a queue on a storage that takes items over (file_storage, or an
// in-memory queue), nothing is given.
func TestNoHandoffWithoutQueueStorage(t *testing.T) {
	b := newBackend(t)
	cfg := wireConfig(b)
	u, err := url.Parse(b.srv.URL)
	require.NoError(t, err)
	e := newWireExporter(cfg, exportertest.NewNopSettings(metadata.Type), logsSignal, u)
	require.NoError(t, e.start(context.Background(), extensionsHost{}))
	require.Nil(t, e.handoff.Load())
}
