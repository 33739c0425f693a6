package runtime_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
)

// BenchmarkThroughput measures trivial tasks through the whole pipeline (claim, run,
// commit) on the in-memory store with default settings.
func BenchmarkThroughput(b *testing.B) {
	benchThroughput(b, nil, nil)
}

// benchThroughput runs b.N noop tasks, created with trace context traceCtx, through a
// worker with tracer provider tp (nil: the global one) on the memory store, and reports
// tasks/s.
func benchThroughput(b *testing.B, traceCtx map[string]string, tp trace.TracerProvider) {
	s := memory.New()
	defer s.Close()
	var done atomic.Int64
	finished := make(chan struct{})
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error {
		if done.Add(1) == int64(b.N) {
			close(finished)
		}
		return nil
	})
	params := make([]store.CreateParams, 0, 1000)
	for i := 0; i < b.N; i += len(params) {
		params = params[:0]
		for j := i; j < min(b.N, i+1000); j++ {
			params = append(params, store.CreateParams{Kind: "noop", TraceContext: traceCtx})
		}
		if _, err := s.CreateTasks(context.Background(), params); err != nil {
			b.Fatal(err)
		}
	}
	w, err := runtime.NewWorker(runtime.Config{Store: s, Mux: mux, TracerProvider: tp,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.ResetTimer()
	start := time.Now()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	<-finished
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
	b.StopTimer()
	cancel()
	if err := <-ran; err != nil {
		b.Fatal(err)
	}
}
