// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

// The storage.Client and storage.Extension contract, as contrib's file_storage
// tests it: each test follows the upstream test it names, in
// github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage@v0.165.1
// (client_test.go, extension_test.go), run against queue_storage through its
// factory. Where queue_storage deliberately differs from file_storage, the test
// says so and asserts queue_storage's documented behaviour. Re-read those
// files on a contrib upgrade. Run with -race.

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// newContractExtension follows extension_test.go's newTestExtension: the
// factory's default config on a fresh directory. It is shut down when the
// test ends (file_storage's tests never shut it down; queue_storage's Shutdown
// also closes the clients left open).
func newContractExtension(t *testing.T, dir string) storage.Extension {
	t.Helper()
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Directory = dir
	ext, err := f.Create(t.Context(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(t.Context(), nil))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(ctx)) })
	se, ok := ext.(storage.Extension)
	require.True(t, ok)
	return se
}

// newContractEntity follows extension_test.go's newTestEntity.
func newContractEntity(name string) component.ID {
	return component.MustNewIDWithName("nop", name)
}

// newContractClient is the client of the one component the contract tests use.
func newContractClient(t *testing.T, se storage.Extension) storage.Client {
	t.Helper()
	client, err := se.GetClient(t.Context(), component.KindReceiver, newContractEntity("my_component"), "")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, client.Close(ctx)) })
	return client
}

// Follows client_test.go TestClientOperations, with a reopen: what Set stored
// is there after the client and then the extension are reopened on the same
// directory (the Client contract: "can be retrieved by the same component
// after a process restart"), and a Delete survives them too.
func TestContractClientOperations(t *testing.T) {
	dir := t.TempDir()
	client := newContractClient(t, newContractExtension(t, dir))

	testKey := "testKey"
	testValue := []byte("testValue")

	// Make sure nothing is there
	value, err := client.Get(ctx, testKey)
	require.NoError(t, err)
	require.Nil(t, value)

	// Set it
	require.NoError(t, client.Set(ctx, testKey, testValue))

	// Get it back out, make sure it's right
	value, err = client.Get(ctx, testKey)
	require.NoError(t, err)
	require.Equal(t, testValue, value)

	// Reopen the client, then the extension (a restart)
	require.NoError(t, client.Close(ctx))
	se := newContractExtension(t, dir)
	client = newContractClient(t, se)
	value, err = client.Get(ctx, testKey)
	require.NoError(t, err)
	require.Equal(t, testValue, value)

	// Delete it
	require.NoError(t, client.Delete(ctx, testKey))

	// Make sure it's gone, also after a reopen
	value, err = client.Get(ctx, testKey)
	require.NoError(t, err)
	require.Nil(t, value)
	require.NoError(t, client.Close(ctx))
	client = newContractClient(t, newContractExtension(t, dir))
	value, err = client.Get(ctx, testKey)
	require.NoError(t, err)
	require.Nil(t, value)
}

// Follows client_test.go TestClientBatchOperations, with a reopen after each
// step that writes.
func TestContractClientBatchOperations(t *testing.T) {
	dir := t.TempDir()
	client := newContractClient(t, newContractExtension(t, dir))
	reopen := func() {
		require.NoError(t, client.Close(ctx))
		client = newContractClient(t, newContractExtension(t, dir))
	}

	testSetEntries := []*storage.Operation{
		storage.SetOperation("testKey1", []byte("testValue1")),
		storage.SetOperation("testKey2", []byte("testValue2")),
	}

	testGetEntries := []*storage.Operation{
		storage.GetOperation("testKey1"),
		storage.GetOperation("testKey2"),
	}

	// Make sure nothing is there
	require.NoError(t, client.Batch(ctx, testGetEntries...))
	for _, op := range testGetEntries {
		require.Nil(t, op.Value)
	}

	// Set it
	require.NoError(t, client.Batch(ctx, testSetEntries...))
	reopen()

	// Get it back out, make sure it's right
	require.NoError(t, client.Batch(ctx, testGetEntries...))
	for i := range testGetEntries {
		require.Equal(t, testSetEntries[i].Key, testGetEntries[i].Key)
		require.Equal(t, testSetEntries[i].Value, testGetEntries[i].Value)
	}

	// Update it (the first entry should be empty and the second one removed)
	testEntriesUpdate := []*storage.Operation{
		storage.SetOperation("testKey1", []byte{}),
		storage.DeleteOperation("testKey2"),
	}
	require.NoError(t, client.Batch(ctx, testEntriesUpdate...))
	reopen()

	// Get it back out, make sure it's right. Upstream compares with
	// require.Equal, for which nil and empty are equal; queue_storage keeps
	// the difference: a key set to an empty value is there, a deleted one is not.
	require.NoError(t, client.Batch(ctx, testGetEntries...))
	require.Equal(t, []byte{}, testGetEntries[0].Value)
	require.NotNil(t, testGetEntries[0].Value)
	require.Nil(t, testGetEntries[1].Value)

	// Delete it all
	testEntriesDelete := []*storage.Operation{
		storage.DeleteOperation("testKey1"),
		storage.DeleteOperation("testKey2"),
	}
	require.NoError(t, client.Batch(ctx, testEntriesDelete...))
	reopen()

	// Make sure it's gone
	require.NoError(t, client.Batch(ctx, testGetEntries...))
	for i := range testGetEntries {
		require.Equal(t, testGetEntries[i].Key, testEntriesDelete[i].Key)
		require.Nil(t, testGetEntries[i].Value)
	}
}

// Follows client_test.go TestBatchInvalidOperationType. Deliberate difference:
// file_storage answers "wrong operation type"; queue_storage names the type.
// Both apply nothing of such a batch (file_storage rolls its transaction
// back), which upstream does not assert and this test does.
func TestContractBatchInvalidOperationType(t *testing.T) {
	dir := t.TempDir()
	client := newContractClient(t, newContractExtension(t, dir))

	err := client.Batch(ctx,
		storage.SetOperation("before", []byte("v")),
		&storage.Operation{Key: "bad", Type: storage.OpType(99)},
		storage.SetOperation("after", []byte("v")))
	require.EqualError(t, err, "queue_storage: unknown operation type 99")

	require.NoError(t, client.Close(ctx))
	client = newContractClient(t, newContractExtension(t, dir))
	for _, k := range []string{"before", "bad", "after"} {
		v, err := client.Get(ctx, k)
		require.NoError(t, err)
		require.Nil(t, v, "key %q of a refused batch", k)
	}
}

// Not in file_storage's tests, but the way exporterhelper uses a client: one
// client from many goroutines (the persistent queue's producers and
// consumers). Each goroutine's batches are atomic and its keys its own.
func TestContractOneClientConcurrently(t *testing.T) {
	dir := t.TempDir()
	client := newContractClient(t, newContractExtension(t, dir))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := fmt.Sprintf("%d/%d", g, i)
				if !assert.NoError(t, client.Batch(ctx, storage.SetOperation("shared", []byte(k)), storage.SetOperation(k, []byte(k)))) {
					return
				}
				get := storage.GetOperation(k)
				if !assert.NoError(t, client.Batch(ctx, storage.SetOperation("shared", []byte(k)), get)) || !assert.Equal(t, []byte(k), get.Value) {
					return
				}
				if i%2 == 0 && !assert.NoError(t, client.Delete(ctx, k)) {
					return
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, client.Close(ctx))
	client = newContractClient(t, newContractExtension(t, dir))
	for g := range 8 {
		for i := range 200 {
			k := fmt.Sprintf("%d/%d", g, i)
			v, err := client.Get(ctx, k)
			require.NoError(t, err)
			if i%2 == 0 {
				require.Nil(t, v, k)
			} else {
				require.Equal(t, []byte(k), v, k)
			}
		}
	}
	shared, err := client.Get(ctx, "shared")
	require.NoError(t, err)
	require.Contains(t, string(shared), "/199", "the last batch of some goroutine wrote it")
}

// Follows extension_test.go TestClientHandlesSimpleCases: setting twice and
// deleting twice are not errors.
func TestContractClientHandlesSimpleCases(t *testing.T) {
	client := newContractClient(t, newContractExtension(t, t.TempDir()))

	myBytes := []byte("value")

	// Set the data, then again (nop does not error)
	require.NoError(t, client.Set(ctx, "key", myBytes))
	require.NoError(t, client.Set(ctx, "key", myBytes))

	// Get actual data
	data, err := client.Get(ctx, "key")
	require.NoError(t, err)
	require.Equal(t, myBytes, data)

	// Delete the data, then again (nop does not error)
	require.NoError(t, client.Delete(ctx, "key"))
	require.NoError(t, client.Delete(ctx, "key"))

	// Get missing data
	data, err = client.Get(ctx, "key")
	require.NoError(t, err)
	require.Nil(t, data)
}

// Key shapes. Deliberate difference: bbolt refuses an empty key ("key
// required") and keys above 32 KiB ("key too large"), so file_storage does;
// queue_storage stores any string as a key (README, On-disk format: a key is
// a length and bytes), and keeps it across a reopen.
func TestContractKeyShapes(t *testing.T) {
	dir := t.TempDir()
	client := newContractClient(t, newContractExtension(t, dir))
	keys := []string{"", strings.Repeat("k", 40<<10), "with\x00nul", "ünïcode/and spaces"}
	for i, k := range keys {
		require.NoError(t, client.Set(ctx, k, []byte(strconv.Itoa(i))))
	}
	require.NoError(t, client.Close(ctx))
	client = newContractClient(t, newContractExtension(t, dir))
	for i, k := range keys {
		v, err := client.Get(ctx, k)
		require.NoError(t, err)
		require.Equal(t, []byte(strconv.Itoa(i)), v, "key of %d bytes", len(k))
	}
}

// Deliberate difference: file_storage's client also implements the optional
// storage.Walker (client_test.go TestWalk); queue_storage does not (no
// component of this distribution walks a queue). A client that starts to
// must be tested as TestWalk does.
func TestContractNoWalker(t *testing.T) {
	client := newContractClient(t, newContractExtension(t, t.TempDir()))
	_, ok := client.(storage.Walker)
	require.False(t, ok)
}

// After Close a client's operations fail (file_storage: bbolt's "database
// not open"; queue_storage: errClosed), and Close again is not an error.
func TestContractClosedClient(t *testing.T) {
	client := newContractClient(t, newContractExtension(t, t.TempDir()))
	require.NoError(t, client.Close(ctx))
	require.NoError(t, client.Close(ctx))
	_, err := client.Get(ctx, "key")
	require.ErrorIs(t, err, errClosed)
	require.ErrorIs(t, client.Set(ctx, "key", nil), errClosed)
	require.ErrorIs(t, client.Batch(ctx, storage.DeleteOperation("key")), errClosed)
}
