// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

// The storage.Extension half of the contract tests (contract_test.go says
// which upstream files and version they follow): clients of several
// components, their names and their directory.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// Follows extension_test.go TestExtensionIntegrity: a client per component,
// used concurrently, each sees only its own values. Upstream calls require in
// the goroutines; assert is what may be called there.
func TestContractExtensionIntegrity(t *testing.T) {
	se := newContractExtension(t, t.TempDir())

	type mockComponent struct {
		kind component.Kind
		name component.ID
	}

	components := []mockComponent{
		{kind: component.KindReceiver, name: newContractEntity("receiver_one")},
		{kind: component.KindReceiver, name: newContractEntity("receiver_two")},
		{kind: component.KindProcessor, name: newContractEntity("processor_one")},
		{kind: component.KindProcessor, name: newContractEntity("processor_two")},
		{kind: component.KindExporter, name: newContractEntity("exporter_one")},
		{kind: component.KindExporter, name: newContractEntity("exporter_two")},
		{kind: component.KindExtension, name: newContractEntity("extension_one")},
		{kind: component.KindExtension, name: newContractEntity("extension_two")},
	}

	// Make a client for each component
	clients := make(map[component.ID]storage.Client)
	for _, c := range components {
		client, err := se.GetClient(ctx, c.kind, c.name, "")
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, client.Close(ctx)) })
		clients[c.name] = client
	}

	thrashClient := func(wg *sync.WaitGroup, n component.ID, c storage.Client) {
		defer wg.Done()
		// keys and values
		keys := []string{"a", "b", "c", "d", "e"}
		myBytes := []byte(n.Name())

		// Set my values
		for i := range keys {
			if !assert.NoError(t, c.Set(ctx, keys[i], myBytes)) { //nolint:testifylint // require-error: this runs in a thrashing goroutine, where require's FailNow must not be called
				return
			}
		}

		// Repeatedly thrash client
		for range 100 {
			// Make sure my values are still mine
			for i := range keys {
				v, err := c.Get(ctx, keys[i])
				if !assert.NoError(t, err) || !assert.Equal(t, myBytes, v) { //nolint:testifylint // require-error: this runs in a thrashing goroutine, where require's FailNow must not be called
					return
				}
			}

			// Delete my values
			for i := range keys {
				if !assert.NoError(t, c.Delete(ctx, keys[i])) { //nolint:testifylint // require-error: this runs in a thrashing goroutine, where require's FailNow must not be called
					return
				}
			}

			// Reset my values
			for i := range keys {
				if !assert.NoError(t, c.Set(ctx, keys[i], myBytes)) {
					return
				}
			}
		}
	}

	// Use clients concurrently
	var wg sync.WaitGroup
	for name, client := range clients {
		wg.Add(1)
		go thrashClient(&wg, name, client)
	}
	wg.Wait()
}

// Follows extension_test.go TestTwoClientsWithDifferentNames, and the same for
// one component's name under two kinds: the clients do not share keys, also
// after a reopen.
func TestContractTwoClientsWithDifferentNames(t *testing.T) {
	dir := t.TempDir()
	se := newContractExtension(t, dir)
	get := func(kind component.Kind, name string) storage.Client {
		c, err := se.GetClient(ctx, kind, newContractEntity("my_component"), name)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, c.Close(ctx)) })
		return c
	}
	clients := []storage.Client{get(component.KindReceiver, "foo"), get(component.KindReceiver, "bar"), get(component.KindExporter, "foo")}
	for i, c := range clients {
		require.NoError(t, c.Set(ctx, "key", []byte(fmt.Sprint("value", i))))
	}
	for i, c := range clients {
		data, err := c.Get(ctx, "key")
		require.NoError(t, err)
		require.Equal(t, []byte(fmt.Sprint("value", i)), data)
		require.NoError(t, c.Close(ctx))
	}
	se = newContractExtension(t, dir)
	clients = []storage.Client{get(component.KindReceiver, "foo"), get(component.KindReceiver, "bar"), get(component.KindExporter, "foo")}
	for i, c := range clients {
		data, err := c.Get(ctx, "key")
		require.NoError(t, err)
		require.Equal(t, []byte(fmt.Sprint("value", i)), data, "after a reopen")
	}
}

// Follows extension_test.go TestSanitize: queue_storage names a client's
// directory as file_storage names its database file (migrate_from relies on
// it), so the same table holds.
func TestContractSanitize(t *testing.T) {
	testCases := []struct {
		name          string
		componentName string
		sanitizedName string
	}{
		{
			name:          "safe characters",
			componentName: `.UPPERCASE-lowercase_1234567890`,
			sanitizedName: `.UPPERCASE-lowercase_1234567890`,
		},
		{
			name:          "name with a slash",
			componentName: `logs/json`,
			sanitizedName: `logs~002Fjson`,
		},
		{
			name:          "name with a tilde",
			componentName: `logs~json`,
			sanitizedName: `logs~007Ejson`,
		},
		{
			name:          "popular unsafe characters",
			componentName: `tilde~slash/backslash\colon:asterisk*questionmark?quote'doublequote"angle<>pipe|exclamationmark!percent%space `,
			sanitizedName: `tilde~007Eslash~002Fbackslash~005Ccolon~003Aasterisk~002Aquestionmark~003Fquote~0027doublequote~0022angle~003C~003Epipe~007Cexclamationmark~0021percent~0025space~0020`,
		},
	}

	for _, testCase := range testCases {
		t.Run(testCase.name, func(t *testing.T) {
			assert.Equal(t, testCase.sanitizedName, sanitize(testCase.componentName))
		})
	}
}

// Follows extension_test.go TestComponentNameWithUnsafeCharacters, and checks
// what upstream does not: the client's data stays inside the directory, under
// the escaped name, and a storage name with unsafe characters is escaped too.
func TestContractComponentNameWithUnsafeCharacters(t *testing.T) {
	dir := t.TempDir()
	se := newContractExtension(t, dir)

	client, err := se.GetClient(ctx, component.KindReceiver, newContractEntity("my/slashed/component*"), "../logs")
	require.NoError(t, err)
	require.NotNil(t, client)
	require.NoError(t, client.Set(ctx, "key", []byte("value")))
	require.NoError(t, client.Close(ctx))

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "receiver_nop_my~002Fslashed~002Fcomponent~002A_..~002Flogs", entries[0].Name())
	require.DirExists(t, filepath.Join(dir, entries[0].Name()))
	parent, err := os.ReadDir(filepath.Dir(dir))
	require.NoError(t, err)
	for _, e := range parent {
		require.False(t, strings.HasPrefix(e.Name(), "logs"), "a client wrote outside its directory: %s", e.Name())
	}
}

// Follows extension_test.go TestGetClientErrorsOnDeletedDirectory.
// Deliberate difference: file_storage refuses a client when its directory is
// gone (it has create_directory for that); queue_storage creates its
// directory whenever it is missing (README: directory, "created if missing"),
// so the client works.
func TestContractGetClientRecreatesDeletedDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "queue")
	se := newContractExtension(t, dir)

	// Delete the directory before getting client
	require.NoError(t, os.RemoveAll(dir))

	client := newContractClient(t, se)
	require.NoError(t, client.Set(ctx, "key", []byte("value")))
	require.DirExists(t, dir)
}
