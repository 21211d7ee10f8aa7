// SPDX-License-Identifier: Apache-2.0

package e2e

// QueueVariantEnv chooses, for every test that starts config/gateway.yaml
// through NewGateway, the queue the relay runs with: unset runs the shipped
// file as it is; "durable" runs DurableQueueConfig, so the whole reliability
// suite proves durable_queue's zero loss with the same scenarios.
const QueueVariantEnv = "RELAY_TEST_QUEUE"

// DurableQueueConfig writes DurableQueueYAML into dir and returns the file.
func DurableQueueConfig(dir string) (string, error) {
	return writeGatewayVariant(dir, "gateway-durable.yaml", DurableQueueYAML)
}

// DurableQueueYAML is config/gateway.yaml with its exporter's persistent
// sending queue replaced by a durable_queue processor on queue_storage
// (components/durablequeueprocessor) at the end of every pipeline. The bench's
// gateway-durable variants start from it too.
func DurableQueueYAML() (string, error) {
	text, err := shippedGateway()
	if err != nil {
		return "", err
	}
	return editGateway("durable_queue variant", text, []gatewayEdit{
		{"      storage: queue_storage\n", "      enabled: false\n", 1},
		{"\nextensions:\n", "\nextensions:\n  queue_storage/durable:\n    directory: ${env:RELAY_QUEUE_DIR}/durable\n", 1},
		{"\nprocessors:\n", "\nprocessors:\n  durable_queue/default:\n    storage: queue_storage/durable\n    max_bytes: ${env:OTEL_EXPORTER_DEFAULT_QUEUE_BYTES:-536870912}\n", 1},
		{"  extensions: [", "  extensions: [queue_storage/durable, ", 1},
		{"processors: [memory_limiter, attributes_to_resource/pod, k8s_attributes/logs]", "processors: [memory_limiter, attributes_to_resource/pod, k8s_attributes/logs, durable_queue/default]", 1},
		// metrics and traces: the same exporter has no queue of its own now.
		{"processors: [memory_limiter]\n", "processors: [memory_limiter, durable_queue/default]\n", 2},
	})
}
