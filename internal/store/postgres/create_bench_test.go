package postgres_test

import (
	"context"
	"fmt"
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
//
// BenchmarkCreateTasks/size=N/{copy,insert} times CreateTasks of smaller keyless batches
// written by COPY and by the INSERT, the choice copyMinTasks (createcopy.go) makes.
func BenchmarkCreateTasks(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.NewPool(b)
	st := postgres.New(pool)
	b.Cleanup(st.Close)
	batch := func(size int) []store.CreateParams {
		ps := make([]store.CreateParams, size)
		for i := range ps {
			ps[i] = store.CreateParams{Kind: "noop"}
		}
		return ps
	}
	run := func(b *testing.B, size int, create func([]store.CreateParams) error) {
		execTB(b, pool, `TRUNCATE rota.tasks, rota.task_attempts CASCADE`)
		n := 0
		for b.Loop() {
			if n++; n%100 == 0 {
				b.StopTimer()
				execTB(b, pool, `TRUNCATE rota.tasks, rota.task_attempts CASCADE`)
				b.StartTimer()
			}
			if err := create(batch(size)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "tasks/s")
	}
	createTasks := func(ps []store.CreateParams) error {
		_, err := st.CreateTasks(ctx, ps)
		return err
	}
	b.Run("CreateTasks", func(b *testing.B) { run(b, 1000, createTasks) })
	b.Run("CreateTasksTx", func(b *testing.B) {
		run(b, 1000, func(ps []store.CreateParams) error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := st.CreateTasksTx(ctx, tx, ps)
				return err
			})
		})
	})
	for _, size := range []int{1, 5, 10, 20, 50} {
		for _, mode := range []struct {
			name    string
			minCopy int
		}{{"copy", 1}, {"insert", 1 << 30}} {
			b.Run(fmt.Sprintf("size=%d/%s", size, mode.name), func(b *testing.B) {
				defer postgres.SetCopyMinTasks(mode.minCopy)()
				run(b, size, createTasks)
			})
		}
	}
}
