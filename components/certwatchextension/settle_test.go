// SPDX-License-Identifier: Apache-2.0

package certwatchextension

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-relay/otelcol-relay/internal/testcerts"
)

// TestReadSettledNeverTorn swaps two client identities with the kubelet's
// atomic writer while reading the files. It reads until plain reads have
// been seen torn (one identity's certificate beside the other's key) a few
// times, which proves the race is there, and requires that no settled read
// was ever torn: a torn read would be validated as a failed rotation.
func TestReadSettledNeverTorn(t *testing.T) {
	f := newFixture(t)
	a, b := f.client, f.clientCA.Client(t, testcerts.Options{CommonName: "relay-2"})
	f.writeValid(t)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			kp := a
			if i%2 == 1 {
				kp = b
			}
			if writeErr = testcerts.AtomicWriteErr(f.dir, f.files(f.serverCA.CertPEM, kp)); writeErr != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	torn := func(fc fileContents) bool {
		return bytes.Equal(fc.cert, a.CertPEM) != bytes.Equal(fc.key, a.KeyPEM)
	}
	const wantTorn = 3
	plainTorn, settled, settledTorn := 0, 0, 0
	deadline := time.Now().Add(30 * time.Second)
	for plainTorn < wantTorn && time.Now().Before(deadline) {
		if fc, _, err := readFiles(f.cfg); err == nil && torn(fc) {
			plainTorn++
		}
		fc, _, ok, err := readSettled(f.cfg)
		require.NoError(t, err)
		if ok {
			settled++
			if torn(fc) {
				settledTorn++
			}
		}
	}
	close(stop)
	wg.Wait()
	require.NoError(t, writeErr)
	require.GreaterOrEqual(t, plainTorn, wantTorn, "the writer never tore a plain read: the test proves nothing")
	assert.Positive(t, settled)
	assert.Zero(t, settledTorn, "%d of %d settled reads were torn", settledTorn, settled)
}
