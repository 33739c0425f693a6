package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rotaqueue/rota"
)

// InsertConfig configures Insert.
type InsertConfig struct {
	// Tasks each case inserts (rounded up to whole batches).
	Tasks int
	// MaxCaseDuration, when positive, ends a case early after this long; its rate is
	// then over the tasks it inserted. It keeps the slow single-insert cases of a large
	// --tasks short.
	MaxCaseDuration time.Duration
}

// InsertCase is one way of inserting, and its throughput.
type InsertCase struct {
	Name       string  `json:"name"`
	Batch      int     `json:"batch"`      // tasks per call
	Goroutines int     `json:"goroutines"` // calls in parallel
	Tasks      int     `json:"tasks"`
	Seconds    float64 `json:"seconds"`
	// TasksPerSec is the case's throughput.
	TasksPerSec float64 `json:"tasks_per_sec"`
	// Call is the latency of one EnqueueMany or Enqueue call.
	Call Latency `json:"call"`
}

// insertCases are the cases Insert runs, in order.
type insertCaseSpec struct {
	name              string
	batch, goroutines int
	single            bool // Enqueue rather than EnqueueMany
}

var insertCases = []insertCaseSpec{
	{"EnqueueMany, batch of 1", 1, 1, false},
	{"EnqueueMany, batch of 100", 100, 1, false},
	{"EnqueueMany, batch of 1000", 1000, 1, false},
	{"Enqueue, 8 goroutines", 1, 8, true},
}

// Insert measures how fast tasks are inserted through the public client: EnqueueMany
// with batches of 1, 100 and 1000 from one goroutine, and single-task Enqueue calls
// from 8 goroutines. No worker runs. Each case starts from an empty queue.
func Insert(ctx context.Context, t *Target, cfg InsertConfig) (*Result, error) {
	if cfg.Tasks <= 0 {
		return nil, fmt.Errorf("insert: tasks must be positive, got %d", cfg.Tasks)
	}
	client := rota.NewPostgresClient(t.Pool)
	defer client.Close()
	res := &Result{Workload: WorkloadInsert}
	for _, c := range insertCases {
		if err := t.reset(ctx); err != nil {
			return nil, err
		}
		ic, err := insertCase(ctx, t, client, cfg, c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		total, _, err := t.statusCounts(ctx)
		if err != nil {
			return nil, err
		}
		if total != ic.Tasks {
			return nil, fmt.Errorf("%s: database check: %d tasks in the queue, want %d", c.name, total, ic.Tasks)
		}
		res.Insert = append(res.Insert, ic)
	}
	return res, nil
}

func insertCase(ctx context.Context, t *Target, client *rota.Client, cfg InsertConfig, c insertCaseSpec) (InsertCase, error) {
	name, batch, goroutines := c.name, c.batch, c.goroutines
	calls := (cfg.Tasks + batch - 1) / batch
	t.Progress.begin(WorkloadInsert, name, int64(calls*batch))
	var deadline time.Time
	var next atomic.Int64 // calls handed out
	var inserted atomic.Int64
	var mu sync.Mutex
	durations := make([]time.Duration, 0, calls)
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	if cfg.MaxCaseDuration > 0 {
		deadline = start.Add(cfg.MaxCaseDuration)
	}
	for range goroutines {
		g.Go(func() error {
			params := make([]rota.EnqueueParams, batch)
			for i := range params {
				params[i] = rota.EnqueueParams{Kind: "noop", Queue: t.Queue}
			}
			var mine []time.Duration
			defer func() {
				mu.Lock()
				durations = append(durations, mine...)
				mu.Unlock()
			}()
			for next.Add(1) <= int64(calls) {
				if !deadline.IsZero() && time.Now().After(deadline) {
					return nil
				}
				var err error
				began := time.Now()
				if c.single {
					_, err = client.Enqueue(gctx, params[0])
				} else {
					_, err = client.EnqueueMany(gctx, params)
				}
				if err != nil {
					return err
				}
				mine = append(mine, time.Since(began))
				inserted.Add(int64(batch))
				t.Progress.add(int64(batch))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return InsertCase{}, err
	}
	elapsed := time.Since(start)
	n := int(inserted.Load())
	return InsertCase{
		Name:        name,
		Batch:       batch,
		Goroutines:  goroutines,
		Tasks:       n,
		Seconds:     elapsed.Seconds(),
		TasksPerSec: float64(n) / elapsed.Seconds(),
		Call:        summarize(durations),
	}, nil
}
