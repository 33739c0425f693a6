package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// BenchmarkCreateTasks times one CreateTasks of a batch of 1,000 no-op tasks (the bench/
// insert workload's batch), on its own and inside a caller's transaction
// (CreateTasksTx, begin and commit included). The table is emptied every 100 batches,
// outside the timer. Run on the stock cluster:
//
//	eval "$(scripts/pg-stock.sh env)"
//	go test -run '^$' -bench CreateTasks -benchtime 100x ./internal/store/postgres/
func BenchmarkCreateTasks(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.NewPool(b)
	st := postgres.New(pool)
	b.Cleanup(st.Close)
	const size = 1000
	batch := func() []store.CreateParams {
		ps := make([]store.CreateParams, size)
		for i := range ps {
			ps[i] = store.CreateParams{Kind: "noop"}
		}
		return ps
	}
	run := func(b *testing.B, create func([]store.CreateParams) error) {
		execTB(b, pool, `TRUNCATE rota.tasks, rota.task_attempts CASCADE`)
		n := 0
		for b.Loop() {
			if n++; n%100 == 0 {
				b.StopTimer()
				execTB(b, pool, `TRUNCATE rota.tasks, rota.task_attempts CASCADE`)
				b.StartTimer()
			}
			if err := create(batch()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "tasks/s")
	}
	b.Run("CreateTasks", func(b *testing.B) {
		run(b, func(ps []store.CreateParams) error {
			_, err := st.CreateTasks(ctx, ps)
			return err
		})
	})
	b.Run("CreateTasksTx", func(b *testing.B) {
		run(b, func(ps []store.CreateParams) error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := st.CreateTasksTx(ctx, tx, ps)
				return err
			})
		})
	})
}
