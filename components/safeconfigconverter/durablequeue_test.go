// SPDX-License-Identifier: Apache-2.0

package safeconfigconverter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDurableQueuePlacement(t *testing.T) {
	ok := parse(t, `
exporters:
  otlp_http/a: {sending_queue: {enabled: false}}
service:
  pipelines:
    logs: {processors: [memory_limiter, durable_queue/a], exporters: [otlp_http/a]}
    metrics: {processors: [durable_queue/a], exporters: [otlp_http/a]}
    traces: {processors: [durable_queue/a], exporters: [debug]}
`)
	assert.Empty(t, checkDurableQueues(asMap(ok["exporters"]), asMap(asMap(ok["service"])["pipelines"])))

	bad := parse(t, `
exporters:
  otlp_http/a: {sending_queue: {storage: file_storage}}
  otlp_http/b: {sending_queue: {enabled: false}}
service:
  pipelines:
    logs: {processors: [durable_queue/a, batch], exporters: [otlp_http/a, otlp_http/b]}
`)
	errs := checkDurableQueues(asMap(bad["exporters"]), asMap(asMap(bad["service"])["pipelines"]))
	require.Len(t, errs, 3)
	assert.Contains(t, errs[0].Error(), "service::pipelines::logs: processor durable_queue/a must be the last processor")
	assert.Contains(t, errs[1].Error(), "needs exactly one exporter in its pipeline, found 2")
	assert.Contains(t, errs[2].Error(), "exporters::otlp_http/a: sending_queue::enabled must be false behind processor durable_queue/a")
}

// durable_queue's max_bytes counts against its queue_storage volume like a
// sending queue's bound, per signal, with the processor's default when unset.
func TestQueueVolumesDurableQueue(t *testing.T) {
	cfg := parse(t, `
extensions:
  queue_storage: {directory: /pvc/queue, segment_size: 268435456}
processors:
  durable_queue/a: {storage: queue_storage, max_bytes: 268435456}
  durable_queue/unused: {storage: queue_storage}
  durable_queue/default: {storage: queue_storage}
exporters:
  otlp_http/a: {sending_queue: {enabled: false}}
service:
  pipelines:
    logs: {processors: [durable_queue/a], exporters: [otlp_http/a]}
    metrics: {processors: [durable_queue/a], exporters: [otlp_http/a]}
    traces: {processors: [durable_queue/default], exporters: [otlp_http/a]}
`)
	// durable_queue/a: (256 MiB x 2 + 256 MiB x 3) x 2 signals = 2560 MiB;
	// durable_queue/default: (512 MiB x 2 + 256 MiB x 3) x 1 = 1792 MiB.
	assert.Empty(t, checkQueueVolumes(cfg, fixedSize(5)))
	errs := checkQueueVolumes(cfg, fixedSize(4))
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "persistent queues on /pvc/queue need up to 4352 MiB of disk")
	assert.Contains(t, errs[0].Error(), "processors::durable_queue/a: max_bytes 268435456 bytes x 2 signals (logs, metrics)")
	assert.Contains(t, errs[0].Error(), "processors::durable_queue/default: max_bytes 536870912 bytes x 1 signals (traces)")
	assert.NotContains(t, errs[0].Error(), "durable_queue/unused")
}

// otlp_http_wire has otlp_http's sending queue (on by default): the same rule.
func TestDurableQueueBeforeOTLPHTTPWire(t *testing.T) {
	cfg := parse(t, `
exporters:
  otlp_http_wire/a: {endpoint: https://a.example}
service:
  pipelines:
    logs: {processors: [durable_queue/a], exporters: [otlp_http_wire/a]}
`)
	errs := checkDurableQueues(asMap(cfg["exporters"]), asMap(asMap(cfg["service"])["pipelines"]))
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "exporters::otlp_http_wire/a: sending_queue::enabled must be false behind processor durable_queue/a")
}
