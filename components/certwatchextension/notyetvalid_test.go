// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// TestNotYetValidTakenWhenValid: material rejected because a certificate is
// not valid yet (issuer clock skew, a writer that drops a certificate the
// moment it is issued) heals with time, so it is validated again at its
// NotBefore and taken then, although the files do not change again. The poll
// is an hour, so only that re-check can take it. While it waits, the failure
// counter has counted it once and a gauge says when it becomes valid.
func TestNotYetValidTakenWhenValid(t *testing.T) {
	for _, which := range []string{"client certificate", "CA bundle"} {
		t.Run(which, func(t *testing.T) {
			f, e := newStarted(t)

			// x509 keeps whole seconds: NotBefore is 2 to 3 s ahead,
			// time enough to see the rejection on a loaded machine.
			notBefore := time.Now().Add(3 * time.Second)
			ca, client := f.serverCA.CertPEM, f.client
			var inUse func() bool
			switch which {
			case "client certificate":
				client = f.clientCA.Client(t, testcerts.Options{CommonName: "issued-just-now", NotBefore: notBefore, NotAfter: notBefore.Add(24 * time.Hour)})
				inUse = func() bool { return e.clientSerial() == client.Serial() }
			case "CA bundle":
				future := testcerts.NewCAWithValidity(t, "server-ca-2", notBefore, notBefore.Add(24*time.Hour))
				ca = future.CertPEM
				inUse = func() bool { return e.caSerial() == future.Cert.SerialNumber.String() }
			}
			testcerts.AtomicWrite(t, f.dir, f.files(ca, client))

			e.waitReloads(t, resultFailure, 1)
			require.False(t, inUse(), "material taken before its NotBefore")
			assert.Equal(t, f.client.Serial(), e.clientSerial())
			assert.Equal(t, notBefore.Unix(), e.pendingNotBefore(t), "gauge while it waits")

			require.Eventually(t, inUse, waitTimeout, 10*time.Millisecond,
				"material still not in use %s after its NotBefore", waitTimeout)
			assert.Equal(t, int64(1), e.reloads(t, resultSuccess))
			assert.Equal(t, int64(1), e.reloads(t, resultFailure), "counted once, not once per re-check")
			assert.Zero(t, e.pendingNotBefore(t), "gauge once taken")
		})
	}
}

// caSerial is the serial of the first CA certificate in use.
func (s *started) caSerial() string {
	if cas := s.current().cas; len(cas) > 0 {
		return cas[0].serial
	}
	return ""
}

// pendingNotBefore is the value of the pending gauge, 0 when it is absent.
func (s *started) pendingNotBefore(t *testing.T) int64 {
	t.Helper()
	m, err := s.tel.GetMetric(metricPendingNB)
	if err != nil {
		return 0
	}
	for _, dp := range m.Data.(metricdata.Gauge[int64]).DataPoints {
		return dp.Value
	}
	return 0
}
