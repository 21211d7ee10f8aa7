# otelcol-relay image. Nothing is pulled: `make image` cross-compiles
# bin/<os>_<arch>/otelcol-relay outside the image (static, CGO_ENABLED=0) and copies
# it in, the way opentelemetry-collector-releases packages its distributions. No RUN
# step, so every platform builds without emulation (`--platform` sets TARGETARCH).
FROM scratch

ARG TARGETOS
ARG TARGETARCH

ARG VERSION=dev
ARG REVISION=unknown

LABEL org.opencontainers.image.title="otelcol-relay" \
      org.opencontainers.image.description="OpenTelemetry Collector distribution that relays Kubernetes logs and federated Prometheus metrics to OTLP backends" \
      org.opencontainers.image.source="https://github.com/otelcol-relay/otelcol-relay" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      io.otelcol-relay.sbom="/usr/share/doc/otelcol-relay/sbom.cdx.json"

# System roots for backends with public certificates (include_system_ca_certs_pool),
# from Debian's ca-certificates at a pinned version (hack/ca-bundle.sh).
COPY bin/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --chmod=0755 bin/${TARGETOS}_${TARGETARCH}/otelcol-relay /otelcol-relay
# Also where the Tigera operator's StatefulSet runs its collector from (/usr/bin/otelcol).
COPY --chmod=0755 bin/${TARGETOS}_${TARGETARCH}/otelcol-relay /usr/bin/otelcol
# The CycloneDX SBOM of this binary: every Go module in it, at its version.
COPY bin/${TARGETOS}_${TARGETARCH}/otelcol-relay.cdx.json /usr/share/doc/otelcol-relay/sbom.cdx.json
COPY config/container.yaml /etc/otelcol-relay/config.yaml

USER 10001:10001
EXPOSE 4317 4318 8888 13133
ENTRYPOINT ["/otelcol-relay"]
CMD ["--config", "/etc/otelcol-relay/config.yaml"]
