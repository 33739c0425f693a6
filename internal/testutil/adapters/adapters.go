// Package adapters runs a test once per store adapter, for the layers above the store
// (the API, the dashboard) that must behave the same on every one.
package adapters

import (
	"testing"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// Each runs f as parallel subtests "memory" and "postgres", each with a fresh store
// (the PostgreSQL one on a database of its own).
func Each(t *testing.T, f func(t *testing.T, st store.Store)) {
	t.Helper()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		st := memory.New()
		t.Cleanup(st.Close)
		f(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		st := postgres.New(pgtest.NewPool(t))
		t.Cleanup(st.Close)
		f(t, st)
	})
}
