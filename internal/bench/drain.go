package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rotaqueue/rota"
	"github.com/rotaqueue/rota/internal/handlers"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// DrainConfig configures Drain.
type DrainConfig struct {
	// Tasks is the backlog of noop tasks to drain.
	Tasks int
	// Concurrency of the worker; 0 means the runtime's default.
	Concurrency int
}

// drainMilestones are the percentages of the drain at which memory is recorded.
var drainMilestones = []int{10, 50, 100}

// Backlog inserts: batches of backlogBatch tasks from backlogInserters goroutines.
const (
	backlogBatch     = 1000
	backlogInserters = 4
)

// Drain inserts cfg.Tasks noop tasks (not timed), then starts the real worker runtime in
// this process and times it until every task is SUCCEEDED: the handlers have all run and
// the worker has recorded every success (its committed-outcome counter), then the
// database is checked. The Result's Memory follows the process's RSS and Go heap while
// the worker drains.
func Drain(ctx context.Context, t *Target, cfg DrainConfig) (*Result, error) {
	n := int64(cfg.Tasks)
	if n <= 0 {
		return nil, fmt.Errorf("drain: tasks must be positive, got %d", cfg.Tasks)
	}
	if err := t.reset(ctx); err != nil {
		return nil, err
	}
	t.Progress.begin(WorkloadDrain, "insert backlog", n)
	if err := insertBacklog(ctx, t, cfg.Tasks); err != nil {
		return nil, err
	}
	if err := t.vacuum(ctx); err != nil {
		return nil, err
	}

	var handled atomic.Int64
	sampler := newMemorySampler(handled.Load)
	thresholds := make([]int64, len(drainMilestones))
	for i, p := range drainMilestones {
		thresholds[i] = max(1, (n*int64(p)+99)/100)
	}
	mux := runtime.NewMux()
	handlers.Register(mux, handlers.Config{})
	mux.Use(func(next runtime.Handler) runtime.Handler {
		return runtime.HandlerFunc(func(ctx context.Context, job *runtime.Job) error {
			err := next.Work(ctx, job)
			done := handled.Add(1)
			t.Progress.set(done)
			for i, th := range thresholds {
				if done == th {
					sampler.milestone(drainMilestones[i])
				}
			}
			return err
		})
	})
	st := postgres.New(t.Pool)
	defer st.Close()
	w, err := newWorker(st, mux, t.Queue, cfg.Concurrency)
	if err != nil {
		return nil, err
	}

	// The backlog's garbage is not the worker's: collect it and return it to the OS, so
	// the start sample is the baseline the worker's memory is compared with.
	debug.FreeOSMemory()
	t.Progress.begin(WorkloadDrain, "drain", n)
	sampler.begin()
	start := time.Now()
	run := startWorker(ctx, w)
	err = waitFor(ctx, run, time.Millisecond, handled.Load, func() bool {
		return handled.Load() >= n && w.Stats().Succeeded >= n
	})
	elapsed := time.Since(start)
	stopErr := run.stop()
	mem := sampler.end()
	if err = errors.Join(err, stopErr); err != nil {
		return nil, err
	}
	slices.SortFunc(mem.Milestones, func(a, b MemorySample) int { return a.Percent - b.Percent })
	if err := t.verifySucceeded(ctx, cfg.Tasks); err != nil {
		return nil, err
	}
	return &Result{
		Workload:    WorkloadDrain,
		Tasks:       cfg.Tasks,
		Seconds:     elapsed.Seconds(),
		TasksPerSec: float64(n) / elapsed.Seconds(),
		Concurrency: effectiveConcurrency(cfg.Concurrency),
		Worker:      workerCounts(w.Stats()),
		Memory:      mem,
	}, nil
}

// insertBacklog inserts n due noop tasks into the target's queue with EnqueueMany.
func insertBacklog(ctx context.Context, t *Target, n int) error {
	client := rota.NewPostgresClient(t.Pool)
	defer client.Close()
	g, ctx := errgroup.WithContext(ctx)
	var next atomic.Int64 // tasks handed out
	for range backlogInserters {
		g.Go(func() error {
			params := make([]rota.EnqueueParams, 0, backlogBatch)
			for {
				end := next.Add(backlogBatch)
				begin := end - backlogBatch
				if begin >= int64(n) {
					return nil
				}
				params = params[:0]
				for range min(end, int64(n)) - begin {
					params = append(params, rota.EnqueueParams{Kind: "noop", Queue: t.Queue})
				}
				if _, err := client.EnqueueMany(ctx, params); err != nil {
					return fmt.Errorf("insert the backlog: %w", err)
				}
				t.Progress.add(int64(len(params)))
			}
		})
	}
	return g.Wait()
}
