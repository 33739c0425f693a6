package sqsmode_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
	"github.com/rotaqueue/rota/internal/testutil/sqstest"
)

// slotHolding hides a Source's FetchIdle, so that the runtime waits for an idle queue's
// work with one slot reserved: the rule before idle queues held none (the "before" of
// BenchmarkBusyBesideIdleQueues).
type slotHolding struct{ runtime.Source }

// BenchmarkBusyBesideIdleQueues (issue 12 item 9): one worker of 100 slots serves 50
// queues, 49 of them idle, and drains b.N tasks of 50 ms from the busy one, sent by one
// Enqueuer. Reported: tasks/s. Handler-bound, so the figure is about the slots the busy
// queue gets: 100 when idle queues wait holding none, 51 when each holds one.
//
//	go test -run '^$' -bench BusyBesideIdleQueues -benchtime 4000x ./internal/sqsmode/
func BenchmarkBusyBesideIdleQueues(b *testing.B) {
	for _, holdSlots := range []bool{false, true} {
		name := "idle_queues_hold_no_slot"
		if holdSlots {
			name = "idle_queues_hold_a_slot"
		}
		b.Run(name, func(b *testing.B) { benchmarkBusyBesideIdle(b, holdSlots) })
	}
}

func benchmarkBusyBesideIdle(b *testing.B, holdSlots bool) {
	const idleQueues, concurrency, handlerTime = 49, 100, 50 * time.Millisecond
	pool := pgtest.NewPoolConns(b, 16)
	st := postgres.New(pool)
	b.Cleanup(st.Close)
	srv := sqstest.Start(b)
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	rotaQueues := []string{"busy"}
	for i := range idleQueues {
		rotaQueues = append(rotaQueues, fmt.Sprintf("idle%02d", i))
	}
	queues, err := sqsmode.NewQueues(benchClient(b, srv), sqsmode.QueueConfig{Queue: "bench", DLQ: "bench-dlq", Create: true}, rotaQueues)
	if err != nil {
		b.Fatal(err)
	}
	if err := queues.Resolve(ctx, true); err != nil {
		b.Fatal(err)
	}
	busy, err := sqsmode.NewQueues(benchClient(b, srv), sqsmode.QueueConfig{Queue: "bench", DLQ: "bench-dlq", Create: true}, []string{"busy"})
	if err != nil {
		b.Fatal(err)
	}
	for left := b.N; left > 0; {
		params := make([]store.CreateParams, min(left, 5000))
		for i := range params {
			params[i] = store.CreateParams{Kind: "work", Queue: "busy"}
		}
		if _, err := st.CreateTasks(ctx, params); err != nil {
			b.Fatal(err)
		}
		left -= len(params)
	}

	metrics := sqsmode.NewMetrics(nil)
	src, err := sqsmode.NewSource(sqsmode.SourceConfig{Store: st, Client: benchClient(b, srv), Queues: queues, Metrics: metrics, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	var source runtime.Source = src
	if holdSlots {
		source = slotHolding{src}
	}
	var ran atomic.Int64
	mux := runtime.NewMux()
	mux.HandleFunc("work", func(ctx context.Context, _ *runtime.Job) error {
		time.Sleep(handlerTime)
		ran.Add(1)
		return nil
	})
	limits := map[string]int{}
	for _, q := range rotaQueues {
		limits[q] = 0
	}
	w, err := runtime.NewWorker(runtime.Config{Store: st, Mux: mux, Source: source, ClaimFrom: store.StatusEnqueued,
		WorkerID: src.WorkerID(), LeaseDuration: src.LeaseDuration(), FetchBatch: sqsmode.FetchBatch,
		Queues: limits, Concurrency: concurrency, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	time.Sleep(time.Second) // every queue's loops are polling before the clock starts

	enq, err := sqsmode.NewEnqueuer(sqsmode.EnqueuerConfig{Store: st, Client: benchClient(b, srv), Queues: busy,
		Metrics: metrics, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	go enq.Run(runCtx)
	deadline := time.Now().Add(10 * time.Minute)
	for ran.Load() < int64(b.N) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d tasks ran", ran.Load(), b.N)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	src.Close()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
	b.ReportMetric(float64(concurrency)/handlerTime.Seconds(), "slot_bound_tasks/s")
}
