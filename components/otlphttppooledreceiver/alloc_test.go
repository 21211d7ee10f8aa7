// SPDX-License-Identifier: Apache-2.0

package otlphttppooledreceiver

import (
	"bytes"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// One large body must not make every later buffer large: after an 8 MiB body,
// 32 requests of 1 KiB read at the same time (each holds its buffer until all
// are in, so the free lists cannot serve them all) allocate about what their
// bodies need, not 32 copies of the largest body seen. Both with a
// Content-Length and without one (a decompressed body).
func TestSmallBodiesAfterALargeOneAllocateLittle(t *testing.T) {
	const concurrent, smallSize, largeSize = 32, 1 << 10, 8 << 20
	for _, sized := range []bool{true, false} {
		name := "unknown length"
		if sized {
			name = "Content-Length"
		}
		t.Run(name, func(t *testing.T) {
			length := func(n int) int64 {
				if sized {
					return int64(n)
				}
				return -1
			}
			p := newBodyPool(largeSize)
			large := make([]byte, largeSize)
			require.NoError(t, p.decode(io.NopCloser(bytes.NewReader(large)), length(largeSize), func([]byte) error { return nil }))

			small := bytes.Repeat([]byte{0xA5}, smallSize)
			var in, done sync.WaitGroup
			in.Add(concurrent)
			done.Add(concurrent)
			release := make(chan struct{})
			errs := make(chan error, concurrent)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range concurrent {
				go func() {
					defer done.Done()
					errs <- p.decode(io.NopCloser(bytes.NewReader(small)), length(smallSize), func([]byte) error {
						in.Done()
						<-release // hold the buffer until every request has one
						return nil
					})
				}()
			}
			in.Wait()
			close(release)
			done.Wait()
			runtime.ReadMemStats(&after)
			for range concurrent {
				require.NoError(t, <-errs)
			}
			allocated := after.TotalAlloc - before.TotalAlloc
			// 8 KiB a request: a small buffer (4 KiB when the length is
			// unknown) plus the test's own goroutine and reader; io.ReadAll
			// allocates about 2 KiB for a 1 KiB body.
			bound := uint64(concurrent * 8 << 10)
			require.LessOrEqualf(t, allocated, bound, "%d requests of %d bytes after an 8 MiB body allocated %d bytes, want at most %d", concurrent, smallSize, allocated, bound)
			t.Logf("%d requests of %d bytes after an 8 MiB body: %d bytes allocated", concurrent, smallSize, allocated)
		})
	}
}
