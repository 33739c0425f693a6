package sqsmode_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// BenchmarkSQSStatementsAlone measures the floor of SQS mode's database work: the
// statements every task needs (an enqueue round's lock and ENQUEUED mark, a claim by
// id, an outcome batch), run one after the other on one connection with nothing else in
// the way: no SQS calls (the send returns the ids at once), no runtime, no waits on
// other transactions. b.N due noop tasks go through them in rounds of 250 (the
// Enqueuer's default) and claims and outcome batches of the sub-benchmark's size. It
// reports the CPU per task of PostgreSQL's backends and of this process (task_pg_us,
// task_go_us): added to the fauxqs ceiling's CPU per message (BenchmarkSQSModeDrain's
// ceil_msg_cpu_us, the three SQS calls' own cost), it is what any SQS drain of noop
// tasks must spend per task (docs/performance.md, "SQS mode (session 11)").
//
//	go test -run '^$' -bench SQSStatementsAlone -benchtime 20000x ./internal/sqsmode/
func BenchmarkSQSStatementsAlone(b *testing.B) {
	for _, batch := range []int{45, 100} {
		b.Run(fmt.Sprintf("claim_and_outcome_batch=%d", batch), func(b *testing.B) { benchmarkStatementsAlone(b, batch) })
	}
}

func benchmarkStatementsAlone(b *testing.B, batch int) {
	pool := pgtest.NewPoolConns(b, 2)
	pg := postgres.New(pool)
	b.Cleanup(pg.Close)
	ctx := context.Background()
	insertNoops(b, pool, pg, b.N)

	b.ResetTimer()
	meter := startCPUMeter(b, pool)
	statements := startStatementMeter(b, pool) // ROTA_BENCH_PGSS, as BenchmarkSQSModeDrain
	var enqueued []uuid.UUID
	send := func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
		enqueued = append(enqueued, ids...)
		return ids, nil
	}
	for {
		n, err := pg.EnqueueDue(ctx, store.EnqueueParams{Queue: store.DefaultQueue, Limit: 250, RedeliverAfter: sqsmode.DefaultRedeliverAfter}, send)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if len(enqueued) != b.N {
		b.Fatalf("%d of %d tasks enqueued", len(enqueued), b.N)
	}
	for ids := range slices.Chunk(enqueued, batch) {
		tasks, err := pg.ClaimTasks(ctx, store.ClaimParams{Queue: store.DefaultQueue, From: store.StatusEnqueued,
			TaskIDs: ids, WorkerID: "floor", Limit: len(ids), LeaseDuration: runtime.DefaultLeaseDuration})
		if err != nil || len(tasks) != len(ids) {
			b.Fatalf("claimed %d of %d: %v", len(tasks), len(ids), err)
		}
		outcomes := make([]store.Outcome, len(tasks))
		for i, t := range tasks {
			outcomes[i] = store.Outcome{TaskID: t.ID, LeaseToken: t.LeaseToken, Kind: store.Succeed}
		}
		if _, err := pg.RecordOutcomes(ctx, outcomes); err != nil {
			b.Fatal(err)
		}
	}
	use := meter.stop(b)
	statements.stop(b, b.N)
	b.StopTimer()
	use.report(b, "task", b.N)
}
