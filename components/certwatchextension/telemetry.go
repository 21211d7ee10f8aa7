// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-relay/otelcol-relay/components/certwatchextension/internal/metadata"
)

// Attribute keys and values of the instruments metadata.yaml declares.
const (
	resultSuccess        = "success"
	resultFailure        = "failure"
	attrResult           = "result"
	attrRole, attrFile   = "role", "file"
	attrSubject, attrSer = "subject", "serial"
	// attrExtension names the instance: :8888 does not show the
	// otelcol.component.id the collector puts on the instrumentation scope, so
	// without it the series of certwatch/a and certwatch/b would collide.
	attrExtension = "extension"
	roleClient    = "client"
	roleCA        = "ca"
	// The roles of a server's material (Config.Server).
	roleServer   = "server"
	roleClientCA = "client_ca"
)

// telemetry is the generated builder with the gauges wired to the material in
// use, so they can never disagree with what handshakes actually present.
type telemetry struct {
	*metadata.TelemetryBuilder
	successAttrs, failureAttrs metric.MeasurementOption
}

func newTelemetry(e *certwatch) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(e.settings)
	if err != nil {
		return nil, err
	}
	instance := attribute.String(attrExtension, e.id.String())
	t := &telemetry{
		TelemetryBuilder: tb,
		successAttrs:     metric.WithAttributeSet(attribute.NewSet(instance, attribute.String(attrResult, resultSuccess))),
		failureAttrs:     metric.WithAttributeSet(attribute.NewSet(instance, attribute.String(attrResult, resultFailure))),
	}
	if err := t.register(e, metric.WithAttributeSet(attribute.NewSet(instance))); err != nil {
		tb.Shutdown()
		return nil, err
	}
	// Both series exist from the start, so an alert on the failure counter's
	// increase works from the first scrape.
	t.CertwatchReloads.Add(context.Background(), 0, t.successAttrs)
	t.CertwatchReloads.Add(context.Background(), 0, t.failureAttrs)
	return t, nil
}

func (t *telemetry) register(e *certwatch, instance metric.MeasurementOption) error {
	if err := t.RegisterCertwatchLastSuccessfulReloadTimeCallback(func(_ context.Context, o metric.Float64Observer) error {
		if m := e.current(); m != nil {
			o.Observe(float64(m.loadedAt.UnixNano())/1e9, instance)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := t.RegisterCertwatchPendingNotBeforeCallback(func(_ context.Context, o metric.Int64Observer) error {
		if nb := e.pendingNotBefore.Load(); nb != 0 && e.current() != nil {
			o.Observe(nb, instance)
		}
		return nil
	}); err != nil {
		return err
	}
	return t.RegisterCertwatchCertificateNotAfterCallback(func(_ context.Context, o metric.Int64Observer) error {
		m := e.current()
		if m == nil {
			return nil
		}
		observe := func(role string, c certInfo) {
			o.Observe(c.notAfter.Unix(), metric.WithAttributes(
				attribute.String(attrExtension, e.id.String()),
				attribute.String(attrRole, role),
				attribute.String(attrFile, c.file),
				attribute.String(attrSubject, c.subject),
				attribute.String(attrSer, c.serial),
			))
		}
		certRole, caRole := roleClient, roleCA
		if e.cfg.Server {
			certRole, caRole = roleServer, roleClientCA
		}
		for _, c := range m.cas {
			observe(caRole, c)
		}
		if m.client != nil {
			observe(certRole, *m.client)
		}
		return nil
	})
}

func (t *telemetry) reloaded(ctx context.Context, err error) {
	if err != nil {
		t.CertwatchReloads.Add(ctx, 1, t.failureAttrs)
		return
	}
	t.CertwatchReloads.Add(ctx, 1, t.successAttrs)
}

func (t *telemetry) shutdown() error {
	if t != nil {
		t.Shutdown()
	}
	return nil
}
