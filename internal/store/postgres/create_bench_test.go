package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// BenchmarkCreateTasks times one CreateTasks of a batch of 1,000 no-op tasks (the bench/
// insert workload's batch), on its own and inside a caller's transaction
// (CreateTasksTx, begin and commit included), and of a single task. The table is emptied every 100 batches,
// outside the timer. Run on the stock cluster:
//
//	eval "$(scripts/pg-stock.sh env)"
//	go test -run '^$' -bench CreateTasks -benchtime 100x ./internal/store/postgres/
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
	// One task per call, one caller: how most producers enqueue (create_task.sql).
	b.Run("CreateTasks/one", func(b *testing.B) { run(b, 1, createTasks) })
	b.Run("CreateTasksTx", func(b *testing.B) {
		run(b, 1000, func(ps []store.CreateParams) error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := st.CreateTasksTx(ctx, tx, ps)
				return err
			})
		})
	})
}

// BenchmarkCreateTasksCopyOrInsert times keyless batches of each size written by COPY and
// by the INSERT, alternately, one batch each per iteration (so that the load of a shared
// machine falls on both alike), and reports each one's milliseconds per batch and their
// ratio: the choice copyMinTasks (createcopy.go) makes. Run on the stock cluster:
//
//	go test -run '^$' -bench CreateTasksCopyOrInsert -benchtime 100x ./internal/store/postgres/
func BenchmarkCreateTasksCopyOrInsert(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.NewPool(b)
	st := postgres.New(pool)
	b.Cleanup(st.Close)
	for _, size := range []int{1, 20, 50, 100, 200, 1000} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			var spent [2]time.Duration // copy, insert
			n := 0
			for b.Loop() {
				if n%50 == 0 {
					b.StopTimer()
					execTB(b, pool, `TRUNCATE rota.tasks, rota.task_attempts CASCADE`)
					b.StartTimer()
				}
				n++
				for mode, minCopy := range []int{1, 1 << 30} {
					restore := postgres.SetCopyMinTasks(minCopy)
					ps := make([]store.CreateParams, size)
					for i := range ps {
						ps[i] = store.CreateParams{Kind: "noop"}
					}
					t0 := time.Now()
					if _, err := st.CreateTasks(ctx, ps); err != nil {
						b.Fatal(err)
					}
					spent[mode] += time.Since(t0)
					restore()
				}
			}
			perBatch := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(n) }
			b.ReportMetric(perBatch(spent[0]), "copy-ms/batch")
			b.ReportMetric(perBatch(spent[1]), "insert-ms/batch")
			b.ReportMetric(float64(spent[1])/float64(spent[0]), "insert/copy")
		})
	}
}
