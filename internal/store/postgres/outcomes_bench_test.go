package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// BenchmarkRecordOutcomes times one RecordOutcomes call of a batch of each size, its
// tasks claimed just before, outside the timer, from 20,000 due no-op tasks (refilled
// when they run out). A trickle writes batches of 1-10, a drain of hundreds (migration
// 0050 runs the small ones on a plan made once per session). The session's plan is made
// while rota.tasks is empty, its worst case: the batch's rows joined the other way round
// (the table's rows found by the batch's ids, then matched to the batch one by one).
// Run on the stock cluster, old and new builds alternated:
//
//	eval "$(scripts/pg-stock.sh env)"
//	go test -run '^$' -bench RecordOutcomes -benchtime 400x ./internal/store/postgres/
func BenchmarkRecordOutcomes(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.NewPoolConns(b, 1) // one session, one plan
	st := postgres.New(pool)
	b.Cleanup(st.Close)
	execTB(b, pool, `VACUUM ANALYZE rota.tasks, rota.task_attempts`)
	for range 10 {
		if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: store.NewID(), LeaseToken: store.NewID(), Kind: store.Succeed}}); err != nil {
			b.Fatal(err)
		}
	}
	fill := func() {
		execTB(b, pool, `TRUNCATE rota.tasks, rota.task_attempts CASCADE`)
		createNoop(b, st, 20000)
		execTB(b, pool, `VACUUM ANALYZE rota.tasks, rota.task_attempts`)
	}
	for _, size := range []int{1, 8, 16, 64, 1000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			fill()
			claim := store.ClaimParams{Queue: "default", From: store.StatusPending, WorkerID: "w", Limit: size, LeaseDuration: time.Minute}
			outcomes := make([]store.Outcome, 0, size)
			for b.Loop() {
				b.StopTimer()
				tasks, err := st.ClaimTasks(ctx, claim)
				if err == nil && len(tasks) < size {
					fill()
					tasks, err = st.ClaimTasks(ctx, claim)
				}
				if err != nil || len(tasks) != size {
					b.Fatalf("claim: %d tasks, %v", len(tasks), err)
				}
				outcomes = outcomes[:0]
				for _, task := range tasks {
					outcomes = append(outcomes, store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed})
				}
				b.StartTimer()
				if _, err := st.RecordOutcomes(ctx, outcomes); err != nil {
					b.Fatal(err)
				}
			}
			perCall := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(perCall*1e6, "us/call")
			b.ReportMetric(perCall*1e6/float64(size), "us/outcome")
		})
	}
}
