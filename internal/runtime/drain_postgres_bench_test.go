package runtime_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// drainBacklog is the backlog the issue names: 50,000 noop tasks.
const drainBacklog = 50_000

// BenchmarkDrainPostgres drains a backlog of 50,000 noop tasks from PostgreSQL in poll
// mode, per iteration. Two variants run in the same process against the same server:
//
//   - worker: the full runtime (fetcher, executor pool, committer, heartbeats, reaper);
//   - store-loop: the baseline, two goroutines calling ClaimTasks and RecordOutcomes in a
//     tight loop with the same batch size and no runtime at all.
//
// worker / store-loop is the runtime's share of the database's pace. Run with
//
//	go test -run '^$' -bench DrainPostgres -benchtime 3x ./internal/runtime/
func BenchmarkDrainPostgres(b *testing.B) {
	b.Run("worker", func(b *testing.B) {
		pool := pgtest.NewPoolConns(b, 16)
		st := postgres.New(pool)
		defer st.Close()
		var done atomic.Int64
		var finished chan struct{}
		mux := runtime.NewMux()
		mux.HandleFunc("noop", func(context.Context, *runtime.Job) error {
			if done.Add(1) == drainBacklog {
				close(finished)
			}
			return nil
		})
		var elapsed time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			fillBacklog(b, pool, st)
			done.Store(0)
			finished = make(chan struct{})
			w, err := runtime.NewWorker(runtime.Config{Store: st, Mux: mux,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan error, 1)
			b.StartTimer()
			start := time.Now()
			go func() { ran <- w.Run(ctx) }()
			<-finished
			// Drained means committed: wait for the last outcomes to reach the database.
			waitSucceeded(b, pool)
			elapsed += time.Since(start)
			b.StopTimer()
			cancel()
			if err := <-ran; err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(drainBacklog*b.N)/elapsed.Seconds(), "tasks/s")
	})

	b.Run("store-loop", func(b *testing.B) {
		pool := pgtest.NewPoolConns(b, 16)
		st := postgres.New(pool)
		defer st.Close()
		var elapsed time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			fillBacklog(b, pool, st)
			b.StartTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for g := 0; g < 2; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx := context.Background()
					for {
						tasks, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "default", From: store.StatusPending,
							WorkerID: "bench", Limit: min(runtime.DefaultFetchBatch, runtime.DefaultConcurrency), LeaseDuration: time.Minute})
						if err != nil {
							b.Error(err)
							return
						}
						if len(tasks) == 0 {
							return
						}
						outcomes := make([]store.Outcome, len(tasks))
						for j, t := range tasks {
							outcomes[j] = store.Outcome{TaskID: t.ID, LeaseToken: t.LeaseToken, Kind: store.Succeed}
						}
						if _, err := st.RecordOutcomes(ctx, outcomes); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed += time.Since(start)
			b.StopTimer()
			waitSucceeded(b, pool)
		}
		b.ReportMetric(float64(drainBacklog*b.N)/elapsed.Seconds(), "tasks/s")
	})
}

// fillBacklog empties the table and inserts drainBacklog due noop tasks, then vacuums so
// every iteration starts from the same table state.
func fillBacklog(b *testing.B, pool *pgxpool.Pool, st store.Store) {
	fillTasks(b, pool, st, drainBacklog)
}

func waitSucceeded(b *testing.B, pool *pgxpool.Pool) {
	waitSucceededN(b, pool, drainBacklog)
}
