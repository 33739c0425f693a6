package runtime_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// tracingVariants are the tracer providers the tracing benchmarks compare: off (the
// no-op provider a process without OTEL_* variables gets) and on (the SDK, sampling
// everything, its batch span processor exporting to a discard exporter: the cost of
// making, processing and encoding-free export of every span, not of a collector).
func tracingVariants() []struct {
	name string
	tp   func() (trace.TracerProvider, func())
} {
	return []struct {
		name string
		tp   func() (trace.TracerProvider, func())
	}{
		{"off", func() (trace.TracerProvider, func()) { return noop.NewTracerProvider(), func() {} }},
		{"on", func() (trace.TracerProvider, func()) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			return tp, func() { _ = tp.Shutdown(context.Background()) }
		}},
	}
}

// BenchmarkDrainTracing is BenchmarkDrainPostgres/worker (50,000 noop tasks drained
// from PostgreSQL) with tracing off and on, both in each iteration on the same database
// (off first in odd iterations, on first in even ones) so that both see the same machine; every task carries a
// stored trace context of its own. It reports each variant's rate and on/off, the share of the
// untraced rate that tracing keeps:
//
//	go test -run '^$' -bench 'DrainTracing' -benchtime 3x ./internal/runtime/
func BenchmarkDrainTracing(b *testing.B) {
	pool := pgtest.NewPoolConns(b, 16)
	st := postgres.New(pool)
	defer st.Close()
	variants := tracingVariants()
	elapsed := make([]time.Duration, len(variants))
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		for k := range variants {
			v := k
			if i%2 == 1 { // off first, then on first: neither gains from going first
				v = len(variants) - 1 - k
			}
			tp, shutdown := variants[v].tp()
			elapsed[v] += drainTraced(b, pool, st, tp)
			shutdown()
		}
	}
	rate := func(d time.Duration) float64 { return float64(drainBacklog*b.N) / d.Seconds() }
	b.ReportMetric(rate(elapsed[0]), "off-tasks/s")
	b.ReportMetric(rate(elapsed[1]), "on-tasks/s")
	b.ReportMetric(rate(elapsed[1])/rate(elapsed[0]), "on/off")
}

// drainTraced fills the backlog (traced tasks) and times one worker draining it.
func drainTraced(b *testing.B, pool *pgxpool.Pool, st store.Store, tp trace.TracerProvider) time.Duration {
	ctx := context.Background()
	fillBacklog(b, pool, st)
	// A trace of its own per task (the worst case for the claim span's links).
	if _, err := pool.Exec(ctx, `UPDATE rota.tasks SET trace_context = jsonb_build_object('traceparent',
		'00-' || md5(id::text) || '-' || left(md5(id::text || 'span'), 16) || '-01')`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE rota.tasks`); err != nil {
		b.Fatal(err)
	}
	var done atomic.Int64
	finished := make(chan struct{})
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error {
		if done.Add(1) == drainBacklog {
			close(finished)
		}
		return nil
	})
	w, err := runtime.NewWorker(runtime.Config{Store: st, Mux: mux, TracerProvider: tp,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	b.StartTimer()
	start := time.Now()
	go func() { ran <- w.Run(runCtx) }()
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

// BenchmarkThroughputTracing is BenchmarkThroughput (the whole pipeline on the memory
// store, where the runtime's own CPU is all there is, so any tracing cost shows at its
// largest) with tracing off and on.
//
//	go test -run '^$' -bench 'ThroughputTracing' -benchtime 200000x -count 3 ./internal/runtime/
func BenchmarkThroughputTracing(b *testing.B) {
	// One trace for all (the memory store's tasks are created here, in bulk).
	trace := map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	for _, v := range tracingVariants() {
		b.Run(v.name, func(b *testing.B) {
			tp, shutdown := v.tp()
			defer shutdown()
			benchThroughput(b, trace, tp)
		})
	}
}
