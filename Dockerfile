# otelcol-relay image. Nothing is pulled: `make image` builds bin/otelcol-relay outside
# the image (static, CGO_ENABLED=0) and copies it in, the way
# opentelemetry-collector-releases packages its distributions.
FROM scratch

ARG VERSION=dev
ARG REVISION=unknown

LABEL org.opencontainers.image.title="otelcol-relay" \
      org.opencontainers.image.description="OpenTelemetry Collector distribution that relays Kubernetes logs and federated Prometheus metrics to OTLP backends" \
      org.opencontainers.image.source="https://github.com/otelcol-relay/otelcol-relay" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"

# System roots for backends with public certificates (include_system_ca_certs_pool).
COPY bin/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --chmod=0755 bin/otelcol-relay /otelcol-relay
# Also where the Tigera operator's StatefulSet runs its collector from (/usr/bin/otelcol).
COPY --chmod=0755 bin/otelcol-relay /usr/bin/otelcol
COPY config/container.yaml /etc/otelcol-relay/config.yaml

USER 10001:10001
EXPOSE 4317 4318 8888 13133
ENTRYPOINT ["/otelcol-relay"]
CMD ["--config", "/etc/otelcol-relay/config.yaml"]
