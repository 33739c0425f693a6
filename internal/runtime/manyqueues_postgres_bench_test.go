package runtime_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// countingStore counts the statements a worker spends looking for work.
type countingStore struct {
	store.Store
	claims, emptyClaims, nextDue atomic.Int64
}

func (s *countingStore) ClaimTasks(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
	tasks, err := s.Store.ClaimTasks(ctx, p)
	s.claims.Add(1)
	if err == nil && len(tasks) == 0 {
		s.emptyClaims.Add(1)
	}
	return tasks, err
}

func (s *countingStore) NextDue(ctx context.Context, queues []string) (map[string]time.Duration, error) {
	s.nextDue.Add(1)
	return s.Store.NextDue(ctx, queues)
}

// manyQueues names n queues: q00, q01, ...
func manyQueues(n int) map[string]int {
	qs := make(map[string]int, n)
	for i := range n {
		qs[fmt.Sprintf("q%02d", i)] = 0
	}
	return qs
}

// BenchmarkManyQueuesPostgres measures what a poll-mode worker serving 50 queues spends
// on the idle ones (issue #12 item 9), with every setting at its default:
//
//   - idle: 50 empty queues for idleWindow (after a second for the first claims);
//     reports the statements per second spent looking for work (claims, and NextDue
//     calls where the runtime makes them);
//   - busy-beside-49-idle and busy-alone: a 20,000-task noop backlog in one queue, with
//     49 idle queues beside it or none; reports the drain's tasks per second.
//
// Run with
//
//	go test -run '^$' -bench ManyQueuesPostgres -benchtime 1x ./internal/runtime/
func BenchmarkManyQueuesPostgres(b *testing.B) {
	const idleWindow = 10 * time.Second
	b.Run("idle", func(b *testing.B) {
		for range b.N {
			st := &countingStore{Store: newBenchStore(b)}
			stop := runBenchWorker(b, st, manyQueues(50), nil)
			time.Sleep(time.Second) // past the first claim of every queue
			claims, nextDue := st.claims.Load(), st.nextDue.Load()
			time.Sleep(idleWindow)
			claims, nextDue = st.claims.Load()-claims, st.nextDue.Load()-nextDue
			stop()
			secs := idleWindow.Seconds()
			b.ReportMetric(float64(claims)/secs, "claims/s")
			b.ReportMetric(float64(claims+nextDue)/secs, "statements/s")
		}
	})
	for _, tc := range []struct {
		name   string
		queues int
	}{{"busy-beside-49-idle", 50}, {"busy-alone", 1}} {
		b.Run(tc.name, func(b *testing.B) {
			const backlog = 20_000
			var elapsed time.Duration
			for range b.N {
				pool := pgtest.NewPoolConns(b, 16)
				st := postgres.New(pool)
				fillQueue(b, pool, "q00", backlog)
				var done atomic.Int64
				finished := make(chan struct{})
				start := time.Now()
				stop := runBenchWorker(b, st, manyQueues(tc.queues), func() {
					if done.Add(1) == backlog {
						close(finished)
					}
				})
				<-finished
				elapsed += time.Since(start)
				stop()
				st.Close()
			}
			b.ReportMetric(float64(backlog*b.N)/elapsed.Seconds(), "tasks/s")
		})
	}
}

func newBenchStore(b *testing.B) store.Store {
	st := postgres.New(pgtest.NewPoolConns(b, 16))
	b.Cleanup(st.Close)
	return st
}

// runBenchWorker runs a default worker with a noop handler (calling ran, if set) on
// queues; the returned func stops it.
func runBenchWorker(b *testing.B, st store.Store, queues map[string]int, ran func()) (stop func()) {
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error {
		if ran != nil {
			ran()
		}
		return nil
	})
	w, err := runtime.NewWorker(runtime.Config{Store: st, Mux: mux, Queues: queues,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// fillQueue inserts n due noop tasks into queue in one statement.
func fillQueue(b *testing.B, pool *pgxpool.Pool, queue string, n int) {
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO rota.tasks (id, queue, kind, payload, status, scheduled_for, max_attempts)
		SELECT gen_random_uuid(), $1, 'noop', '{}', 'PENDING', now() - interval '1 second', 3
		FROM generate_series(1, $2)`, queue, n); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE rota.tasks`); err != nil {
		b.Fatal(err)
	}
}
