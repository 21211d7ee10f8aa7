// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInspectSeesLiveKeysAndChangesNothing(t *testing.T) {
	dir := t.TempDir()
	o, _ := testOptions(64 << 10)
	s := openTest(t, dir, o)
	require.NoError(t, s.Set(ctx, "a", make([]byte, 100)))
	require.NoError(t, s.Set(ctx, "b", make([]byte, 7)))
	require.NoError(t, s.Set(ctx, "a", make([]byte, 5000)))
	require.NoError(t, s.Delete(ctx, "b"))
	require.NoError(t, s.Set(ctx, "c", make([]byte, 1)))
	require.NoError(t, s.Close(ctx))

	before := snapshot(t, dir)
	live, err := Inspect(dir)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"a": 5000, "c": 1}, live)
	assert.Equal(t, before, snapshot(t, dir), "Inspect must not write")
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}
