// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// Values are the store's own, as with file_storage (bbolt copies both ways): a
// caller that reuses the buffer it passed to Set, or writes into the slice Get
// returned, does not change what is stored. From a metadata's size to a
// queue item's.
func TestValuesAreNotSharedWithCallers(t *testing.T) {
	for _, n := range []int{100, 4 << 10, 110 << 10} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			o, _ := testOptions(t, 1<<20)
			s := openTest(t, t.TempDir(), o)
			defer s.Close(ctx)
			buf := item(1, n)
			mustBatch(t, s, storage.SetOperation("qmv0", []byte("m")), storage.SetOperation("k", buf))
			clear(buf) // the caller's marshal buffer, reused
			expectValue(t, s, "k", item(1, n))

			got, err := s.Get(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			clear(got) // the caller writes into what it read
			expectValue(t, s, "k", item(1, n))

			get := storage.GetOperation("k")
			mustBatch(t, s, storage.SetOperation("qmv0", []byte("m")), get)
			clear(get.Value)
			expectValue(t, s, "k", item(1, n))
		})
	}
}
