package postgres_test

import (
	"testing"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/store/storetest"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// TestConformance runs the store conformance suite against PostgreSQL, each subtest on a
// database of its own.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return postgres.New(pgtest.NewPool(t))
	})
}
