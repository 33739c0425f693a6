package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// BenchmarkEnqueueDue times one EnqueueDue round (one transaction: the locking select,
// the send, the mark) on a table of ROTA_BENCH_ENQUEUE_ROWS rows (default 1,000,000):
// half finished, 45% ENQUEUED and sent within the last minute (their messages are in
// SQS), 2% retries backing off. send is a no-op. Sub-benchmarks:
//
//   - handed=30: 10 due PENDING, 10 due retries and 10 lost messages are handed to send,
//     which reports none sent (so the next round finds them again);
//   - marked=30: the same, reported sent and marked (30 new due tasks are inserted
//     before each round, outside the timer);
//   - idle: nothing needs a message, the enqueuer's usual round;
//   - idle+future: idle with 100,000 PENDING tasks scheduled for later: the PENDING
//     claim index (shared with poll mode's claim) is walked past them.
//
// Run with
//
//	go test -run '^$' -bench EnqueueDue -benchtime 200x ./internal/store/postgres/
func BenchmarkEnqueueDue(b *testing.B) {
	ctx := context.Background()
	rows := envInt("ROTA_BENCH_ENQUEUE_ROWS", 1_000_000)
	pool := pgtest.NewPool(b)
	st := postgres.New(pool)
	b.Cleanup(st.Close)
	fillEnqueueBacklog(b, pool, "q", rows/2, rows*45/100, rows/50)
	addDue(b, pool, "q", 10)
	execTB(b, pool, `VACUUM ANALYZE rota.tasks`)
	p := store.EnqueueParams{Queue: "q", Limit: 100, RedeliverAfter: 5 * time.Minute}

	round := func(b *testing.B, report bool, want int) {
		b.Helper()
		handed := 0
		n, err := st.EnqueueDue(ctx, p, func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
			handed = len(ids)
			if report {
				return ids, nil
			}
			return nil, nil
		})
		if err != nil || handed != want || (report && n != want) {
			b.Fatalf("EnqueueDue: handed %d, marked %d, %v; want %d", handed, n, err, want)
		}
	}
	b.Run("handed=30", func(b *testing.B) {
		for b.Loop() {
			round(b, false, 30)
		}
	})
	b.Run("marked=30", func(b *testing.B) {
		round(b, true, 30) // the due tasks left by handed=30
		for b.Loop() {
			b.StopTimer()
			addDue(b, pool, "q", 10)
			b.StartTimer()
			round(b, true, 30)
		}
	})
	b.Run("idle", func(b *testing.B) {
		for b.Loop() {
			round(b, false, 0)
		}
	})
	b.Run("idle+future", func(b *testing.B) {
		execTB(b, pool, `
			INSERT INTO rota.tasks (id, queue, kind, status, scheduled_for)
			SELECT gen_random_uuid(), 'q', 'k', 'PENDING', now() + interval '1 hour'
			FROM generate_series(1, 100000)`)
		execTB(b, pool, `ANALYZE rota.tasks`)
		for b.Loop() {
			round(b, false, 0)
		}
	})
}
