package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/rotaqueue/rota"
	"github.com/rotaqueue/rota/internal/handlers"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// SteadyConfig configures Steady.
type SteadyConfig struct {
	// Rate is the tasks enqueued per second; Duration how long the producer runs.
	Rate     float64
	Duration time.Duration
	// Concurrency of the worker; 0 means the runtime's default.
	Concurrency int
	// Producers is the number of enqueueing goroutines. Default 4.
	Producers int
}

// DefaultProducers is the steady producer's goroutines: a few, like an application's
// request handlers, so one slow insert does not hold up the pace.
const DefaultProducers = 4

// SteadyResult is what Steady measured besides the achieved rate (Result.TasksPerSec).
type SteadyResult struct {
	TargetRate float64 `json:"target_rate"`
	Producers  int     `json:"producers"`
	// Pickup is from the enqueue's commit to its handler starting.
	Pickup Latency `json:"pickup"`
	// EndToEnd is from the enqueue's commit to the SUCCEEDED outcome's commit.
	EndToEnd Latency `json:"end_to_end"`
}

// Latency summarises a set of durations (nearest-rank percentiles).
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

func summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(ds)))) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return Latency{Count: len(ds), P50: ms(rank(0.50)), P95: ms(rank(0.95)), P99: ms(rank(0.99)), Max: ms(ds[len(ds)-1])}
}

// Steady runs a worker while a paced producer enqueues cfg.Rate tasks per second for
// cfg.Duration, one task per insert (Client.Enqueue) from a few goroutines, the way an
// application enqueues. For every task it measures, all on this process's clock:
//
//   - commit: when Enqueue returned (the insert has committed by then);
//   - start: when the worker called the task's handler (a middleware notes it);
//   - done: when the worker's RecordOutcomes call that wrote SUCCEEDED returned, i.e.
//     committed. The worker's store is wrapped to note it: a post-commit hook.
//
// Pickup is start - commit, end-to-end is done - commit. The database's own timestamps
// (created_at, completed_at) are not used: they are now() at the start of each
// statement's transaction, not its commit, and come from the server's clock, which a
// remote server need not share with this process.
//
// Pickup can be a hair below zero: the worker may see the task (NOTIFY is sent at commit)
// before the producer's goroutine runs again after Enqueue returns.
func Steady(ctx context.Context, t *Target, cfg SteadyConfig) (*Result, error) {
	if cfg.Rate <= 0 || cfg.Duration <= 0 {
		return nil, fmt.Errorf("steady: rate and duration must be positive, got %g and %s", cfg.Rate, cfg.Duration)
	}
	producers := cfg.Producers
	if producers <= 0 {
		producers = DefaultProducers
	}
	total := max(1, int(math.Round(cfg.Rate*cfg.Duration.Seconds())))
	period := time.Duration(float64(time.Second) / cfg.Rate)
	if err := t.reset(ctx); err != nil {
		return nil, err
	}

	tr := &tracker{m: make(map[uuid.UUID]*taskTimes, total+1)}
	mux := runtime.NewMux()
	handlers.Register(mux, handlers.Config{})
	mux.Use(func(next runtime.Handler) runtime.Handler {
		return runtime.HandlerFunc(func(ctx context.Context, job *runtime.Job) error {
			tr.started(job.Task.ID, time.Now())
			return next.Work(ctx, job)
		})
	})
	pg := postgres.New(t.Pool)
	defer pg.Close()
	st := &committedStore{Store: pg, onSucceeded: tr.succeeded}
	w, err := newWorker(st, mux, t.Queue, cfg.Concurrency)
	if err != nil {
		return nil, err
	}
	client := rota.NewPostgresClient(t.Pool)
	defer client.Close()

	run := startWorker(ctx, w)
	defer run.stop()
	// Warm up: one task through the whole path (the worker's LISTEN, the pool's
	// connections, prepared statements). It is not counted.
	t.Progress.begin(WorkloadSteady, "warm up", 1)
	warm, err := client.Enqueue(ctx, rota.EnqueueParams{Kind: "noop", Queue: t.Queue})
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	if err := waitFor(ctx, run, time.Millisecond, tr.doneCount, func() bool { return tr.doneCount() >= 1 }); err != nil {
		return nil, fmt.Errorf("warm-up task: %w", err)
	}
	tr.forget(warm.ID)

	t.Progress.begin(WorkloadSteady, "steady", int64(total))
	g, gctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	start := time.Now()
	for range producers {
		g.Go(func() error {
			timer := time.NewTimer(0)
			defer timer.Stop()
			for {
				i := next.Add(1) - 1
				if i >= int64(total) {
					return nil
				}
				if wait := time.Until(start.Add(time.Duration(i) * period)); wait > 0 {
					timer.Reset(wait)
					select {
					case <-gctx.Done():
						return gctx.Err()
					case <-timer.C:
					}
				}
				task, err := client.Enqueue(gctx, rota.EnqueueParams{Kind: "noop", Queue: t.Queue})
				if err != nil {
					return fmt.Errorf("enqueue: %w", err)
				}
				tr.committed(task.ID, time.Now())
			}
		})
	}
	// The display follows completed tasks.
	stopProgress, progressDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(progressDone)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			t.Progress.set(tr.doneCount())
			select {
			case <-stopProgress:
				return
			case <-tick.C:
			}
		}
	}()
	err = g.Wait()
	produced := time.Since(start)
	if err == nil {
		err = waitFor(ctx, run, 5*time.Millisecond, tr.doneCount, func() bool { return tr.doneCount() >= int64(total) })
	}
	err = errors.Join(err, run.stop())
	close(stopProgress)
	<-progressDone
	if err != nil {
		return nil, err
	}
	if err := t.verifySucceeded(ctx, total+1); err != nil { // + the warm-up task
		return nil, err
	}
	pickup, e2e, err := tr.latencies()
	if err != nil {
		return nil, err
	}
	return &Result{
		Workload:    WorkloadSteady,
		Tasks:       total,
		Seconds:     produced.Seconds(),
		TasksPerSec: float64(total) / produced.Seconds(),
		Concurrency: effectiveConcurrency(cfg.Concurrency),
		Worker:      workerCounts(w.Stats()),
		Steady: &SteadyResult{
			TargetRate: cfg.Rate,
			Producers:  producers,
			Pickup:     summarize(pickup),
			EndToEnd:   summarize(e2e),
		},
	}, nil
}

// taskTimes are the moments Steady notes for one task.
type taskTimes struct {
	commit, start, done time.Time
}

// tracker notes the moments of every task, from the producers, the handler middleware
// and the store wrapper, in whatever order they happen.
type tracker struct {
	mu   sync.Mutex
	m    map[uuid.UUID]*taskTimes
	done atomic.Int64
}

func (tr *tracker) entry(id uuid.UUID) *taskTimes {
	e := tr.m[id]
	if e == nil {
		e = &taskTimes{}
		tr.m[id] = e
	}
	return e
}

func (tr *tracker) committed(id uuid.UUID, at time.Time) {
	tr.mu.Lock()
	tr.entry(id).commit = at
	tr.mu.Unlock()
}

func (tr *tracker) started(id uuid.UUID, at time.Time) {
	tr.mu.Lock()
	if e := tr.entry(id); e.start.IsZero() { // the first attempt's start
		e.start = at
	}
	tr.mu.Unlock()
}

func (tr *tracker) succeeded(id uuid.UUID, at time.Time) {
	tr.mu.Lock()
	tr.entry(id).done = at
	tr.mu.Unlock()
	tr.done.Add(1)
}

// doneCount is how many tasks (including forgotten ones) have committed SUCCEEDED.
func (tr *tracker) doneCount() int64 { return tr.done.Load() }

// forget removes a task from the samples (the warm-up task); its success still counts in
// doneCount, which forget corrects.
func (tr *tracker) forget(id uuid.UUID) {
	tr.mu.Lock()
	delete(tr.m, id)
	tr.mu.Unlock()
	tr.done.Add(-1)
}

// latencies returns pickup and end-to-end durations of every task. Every task must have
// all three moments by now.
func (tr *tracker) latencies() (pickup, e2e []time.Duration, err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	pickup = make([]time.Duration, 0, len(tr.m))
	e2e = make([]time.Duration, 0, len(tr.m))
	for id, e := range tr.m {
		if e.commit.IsZero() || e.start.IsZero() || e.done.IsZero() {
			return nil, nil, fmt.Errorf("task %s: a moment is missing (commit %v, start %v, done %v)",
				id, !e.commit.IsZero(), !e.start.IsZero(), !e.done.IsZero())
		}
		pickup = append(pickup, e.start.Sub(e.commit))
		e2e = append(e2e, e.done.Sub(e.commit))
	}
	return pickup, e2e, nil
}

// committedStore is the worker's store, noting when each SUCCEEDED outcome has
// committed: RecordOutcomes writes a batch in one statement, committed when it returns.
type committedStore struct {
	store.Store
	onSucceeded func(id uuid.UUID, at time.Time)
}

func (s *committedStore) RecordOutcomes(ctx context.Context, outcomes []store.Outcome) ([]store.OutcomeResult, error) {
	res, err := s.Store.RecordOutcomes(ctx, outcomes)
	at := time.Now()
	if err == nil {
		for _, r := range res {
			if r.Err == nil && r.Status == store.StatusSucceeded {
				s.onSucceeded(r.TaskID, at)
			}
		}
	}
	return res, err
}
