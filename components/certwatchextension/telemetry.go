package certwatchextension

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

const scopeName = "github.com/otelcol-relay/otelcol-relay/components/certwatchextension"

// The metric names, exactly as the collector's own telemetry shows them on :8888.
// Every series carries extension="certwatch/<name>", so instances never collide.
const (
	metricReloads        = "otelcol_certwatch_reloads"
	metricLastReload     = "otelcol_certwatch_last_successful_reload_time"
	metricCertNotAfter   = "otelcol_certwatch_certificate_not_after"
	metricPendingNB      = "otelcol_certwatch_pending_not_before"
	resultSuccess        = "success"
	resultFailure        = "failure"
	attrResult           = "result"
	attrRole, attrFile   = "role", "file"
	attrSubject, attrSer = "subject", "serial"
	attrExtension        = "extension"
)

// telemetry holds the instruments. Gauges are observed from the material in use,
// so they can never disagree with what handshakes actually present.
type telemetry struct {
	reloads                    metric.Int64Counter
	reg                        metric.Registration
	successAttrs, failureAttrs metric.MeasurementOption
}

func newTelemetry(mp metric.MeterProvider, e *certwatch) (*telemetry, error) {
	meter := mp.Meter(scopeName)
	instance := attribute.String(attrExtension, e.id.String())
	reloads, err := meter.Int64Counter(metricReloads,
		metric.WithDescription("Reloads of changed TLS material, by result: success (now in use) or failure (rejected; the previous material stays in use)."),
		metric.WithUnit("{reload}"))
	if err != nil {
		return nil, err
	}
	last, err := meter.Float64ObservableGauge(metricLastReload,
		metric.WithDescription("Unix time at which the TLS material in use was loaded (at start or by the last successful reload)."),
		metric.WithUnit("s"))
	if err != nil {
		return nil, err
	}
	notAfter, err := meter.Int64ObservableGauge(metricCertNotAfter,
		metric.WithDescription("Unix time after which each certificate in use (client certificate and CA bundle entries) expires."),
		metric.WithUnit("s"))
	if err != nil {
		return nil, err
	}
	pending, err := meter.Int64ObservableGauge(metricPendingNB,
		metric.WithDescription("Unix time at which the TLS material on disk, rejected because a certificate is not valid yet, becomes valid and is taken. Absent when nothing waits."),
		metric.WithUnit("s"))
	if err != nil {
		return nil, err
	}
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		m, at := e.current(), e.loadedAt()
		if m == nil {
			return nil
		}
		o.ObserveFloat64(last, float64(at.UnixNano())/1e9, metric.WithAttributes(instance))
		if nb := e.pendingNotBefore.Load(); nb != 0 {
			o.ObserveInt64(pending, nb, metric.WithAttributes(instance))
		}
		for _, c := range m.certs {
			o.ObserveInt64(notAfter, c.notAfter.Unix(), metric.WithAttributes(
				instance,
				attribute.String(attrRole, c.role),
				attribute.String(attrFile, c.file),
				attribute.String(attrSubject, c.subject),
				attribute.String(attrSer, c.serial),
			))
		}
		return nil
	}, last, notAfter, pending)
	if err != nil {
		return nil, err
	}
	t := &telemetry{
		reloads:      reloads,
		reg:          reg,
		successAttrs: metric.WithAttributeSet(attribute.NewSet(instance, attribute.String(attrResult, resultSuccess))),
		failureAttrs: metric.WithAttributeSet(attribute.NewSet(instance, attribute.String(attrResult, resultFailure))),
	}
	// Both series exist from the start, so an alert on the failure counter's
	// increase works from the first scrape.
	reloads.Add(context.Background(), 0, t.successAttrs)
	reloads.Add(context.Background(), 0, t.failureAttrs)
	return t, nil
}

func (t *telemetry) reloaded(ctx context.Context, err error) {
	if err != nil {
		t.reloads.Add(ctx, 1, t.failureAttrs)
		return
	}
	t.reloads.Add(ctx, 1, t.successAttrs)
}

func (t *telemetry) shutdown() error {
	if t == nil || t.reg == nil {
		return nil
	}
	return errors.Join(t.reg.Unregister())
}
