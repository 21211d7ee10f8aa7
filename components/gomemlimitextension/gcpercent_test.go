// SPDX-License-Identifier: Apache-2.0

package gomemlimitextension

import (
	"context"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.uber.org/zap"

	"github.com/otelcol-relay/otelcol-relay/components/internal/memtotal"
)

func TestGCPercentSetAndRestored(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	g := &gomemlimit{cfg: &Config{LimitPercentage: 80, GCPercent: 250}, logger: zap.NewNop(), paths: memtotal.Proc,
		getenv: func(string) (string, bool) { return "", false }}
	require.NoError(t, g.Start(context.Background(), componenttest.NewNopHost()))
	assert.Equal(t, 250, debug.SetGCPercent(250))
	require.NoError(t, g.Shutdown(context.Background()))
	assert.Equal(t, 100, debug.SetGCPercent(100), "Shutdown restores the GC target")
}

func TestExplicitGOGCWins(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	g := &gomemlimit{cfg: &Config{LimitPercentage: 80, GCPercent: 250}, logger: zap.NewNop(), paths: memtotal.Proc,
		getenv: func(k string) (string, bool) { return "150", k == "GOGC" }}
	require.NoError(t, g.Start(context.Background(), componenttest.NewNopHost()))
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC in the environment wins")
	require.NoError(t, g.Shutdown(context.Background()))
}

func TestGCPercentValidate(t *testing.T) {
	require.NoError(t, (&Config{LimitPercentage: 80, GCPercent: 300}).Validate())
	for _, v := range []int{-1, 1001} {
		err := (&Config{LimitPercentage: 80, GCPercent: v}).Validate()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "gc_percent: ")
	}
}
