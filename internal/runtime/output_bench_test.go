package runtime_test

import (
	"context"
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

// BenchmarkDrainOutput is BenchmarkDrainPostgres/worker (50,000 noop tasks drained from
// PostgreSQL) with handlers that set no output and with handlers that each set a small
// one (Job.SetOutput, ~10 bytes of JSON), both in each iteration on the same database
// (alternating which goes first) so that both see the same machine. It reports each
// variant's rate and with/without, the share of the rate that outputs keep:
//
//	go test -run '^$' -bench 'DrainOutput' -benchtime 3x ./internal/runtime/
func BenchmarkDrainOutput(b *testing.B) {
	pool := pgtest.NewPoolConns(b, 16)
	st := postgres.New(pool)
	defer st.Close()
	var elapsed [2]time.Duration // [0] without outputs, [1] with
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			withOutput := (k+i)%2 == 1
			d := drainWithOutputs(b, pool, st, withOutput)
			if withOutput {
				elapsed[1] += d
			} else {
				elapsed[0] += d
			}
		}
	}
	rate := func(d time.Duration) float64 { return float64(drainBacklog*b.N) / d.Seconds() }
	b.ReportMetric(rate(elapsed[0]), "none-tasks/s")
	b.ReportMetric(rate(elapsed[1]), "output-tasks/s")
	b.ReportMetric(rate(elapsed[1])/rate(elapsed[0]), "output/none")
}

// drainWithOutputs fills the backlog and times one worker draining it; withOutput makes
// each handler set an output.
func drainWithOutputs(b *testing.B, pool *pgxpool.Pool, st store.Store, withOutput bool) time.Duration {
	fillBacklog(b, pool, st)
	var done atomic.Int64
	finished := make(chan struct{})
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(_ context.Context, job *runtime.Job) error {
		n := done.Add(1)
		if n == drainBacklog {
			close(finished)
		}
		if withOutput {
			return job.SetOutput(map[string]int64{"n": n})
		}
		return nil
	})
	w, err := runtime.NewWorker(runtime.Config{Store: st, Mux: mux, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	b.StartTimer()
	start := time.Now()
	go func() { ran <- w.Run(ctx) }()
	<-finished
	waitSucceeded(b, pool) // drained means committed
	took := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-ran; err != nil {
		b.Fatal(err)
	}
	return took
}
