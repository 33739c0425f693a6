package runtime_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// BenchmarkDrainConcurrencyPostgres drains a backlog of noop tasks with the worker at its
// defaults except Concurrency, which each sub-benchmark sets: for tasks this short the
// drain should grow with concurrency until the database is the limit (claims follow the
// free capacity; outcomes are batched across the process). Run with
//
//	go test -run '^$' -bench DrainConcurrencyPostgres -benchtime 1x ./internal/runtime/
//
// ROTA_BENCH_TASKS sets the backlog (default 100,000). ROTA_BENCH_FETCH_BATCH,
// ROTA_BENCH_COMMIT_BATCH and ROTA_BENCH_FETCH_LOOPS override those settings, for
// exploring them; the defaults are what `rota worker` runs.
func BenchmarkDrainConcurrencyPostgres(b *testing.B) {
	tasks := envInt(b, "ROTA_BENCH_TASKS", 100_000)
	for _, concurrency := range []int{100, 500, 2000} {
		b.Run(fmt.Sprintf("concurrency=%d", concurrency), func(b *testing.B) {
			pool := pgtest.NewPoolConns(b, 16)
			st := postgres.New(pool)
			defer st.Close()
			cfg := runtime.Config{Store: st, Concurrency: concurrency,
				FetchBatch:  envInt(b, "ROTA_BENCH_FETCH_BATCH", 0),
				CommitBatch: envInt(b, "ROTA_BENCH_COMMIT_BATCH", 0),
				FetchLoops:  envInt(b, "ROTA_BENCH_FETCH_LOOPS", 0),
				Logger:      slog.New(slog.NewTextHandler(io.Discard, nil))}
			drained, elapsed := drainWith(b, pool, st, cfg, tasks)
			b.ReportMetric(float64(drained)/elapsed.Seconds(), "tasks/s")
		})
	}
}

// drainWith times, per iteration, a worker of cfg (its Mux set here) draining n fresh
// noop tasks until every one is SUCCEEDED in the database; it returns the tasks drained
// and the time it took.
func drainWith(b *testing.B, pool *pgxpool.Pool, st store.Store, cfg runtime.Config, n int) (int, time.Duration) {
	var done atomic.Int64
	var finished chan struct{}
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error {
		if done.Add(1) == int64(n) {
			close(finished)
		}
		return nil
	})
	cfg.Mux = mux
	total, elapsed := 0, time.Duration(0)
	for range b.N {
		b.StopTimer()
		fillTasks(b, pool, st, n)
		done.Store(0)
		finished = make(chan struct{})
		w, err := runtime.NewWorker(cfg)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		b.StartTimer()
		start := time.Now()
		go func() { ran <- w.Run(ctx) }()
		<-finished
		waitSucceededN(b, pool, n)
		elapsed += time.Since(start)
		b.StopTimer()
		cancel()
		if err := <-ran; err != nil {
			b.Fatal(err)
		}
		total += n
	}
	return total, elapsed
}

// fillTasks empties the table and inserts n due noop tasks, then vacuums.
func fillTasks(b *testing.B, pool *pgxpool.Pool, st store.Store, n int) {
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `TRUNCATE rota.tasks, rota.task_attempts CASCADE`); err != nil {
		b.Fatal(err)
	}
	params := make([]store.CreateParams, 5000)
	for i := range params {
		params[i] = store.CreateParams{Kind: "noop", ScheduledFor: time.Now().Add(-time.Second)}
	}
	for done := 0; done < n; done += len(params) {
		batch := params[:min(len(params), n-done)]
		for i := range batch {
			batch[i].ID = store.NewID()
		}
		if _, err := st.CreateTasks(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE rota.tasks`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
		b.Fatal(err)
	}
}

func waitSucceededN(b *testing.B, pool *pgxpool.Pool, n int) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var got int
		if err := pool.QueryRow(context.Background(),
			`SELECT count(*) FROM rota.tasks WHERE status = 'SUCCEEDED'`).Scan(&got); err != nil {
			b.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d tasks succeeded", got, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return v
}
