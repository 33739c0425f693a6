package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/rotaqueue/rota/internal/handlers"
	"github.com/rotaqueue/rota/internal/proccpu"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/sqsceiling"
	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// DefaultCeilingClients is how many goroutines send, and as many receive and delete,
// when the raw SQS ceiling is measured: 4, as in every ceiling docs/performance.md
// reports (the enqueuer's default sends at once until session 7).
const DefaultCeilingClients = 4

// SQSConfig configures SQSDrain.
type SQSConfig struct {
	// Client reaches the SQS endpoint under test (required). The workload creates
	// queues of its own there and deletes them at the end.
	Client *sqs.Client
	// Endpoint names the endpoint in the result.
	Endpoint string
	// Tasks is the backlog of noop tasks to drain, and the messages of the ceiling.
	Tasks int
	// Concurrency of the worker; 0 means the runtime's default.
	Concurrency int
	// CeilingClients for the raw ceiling; 0 means DefaultCeilingClients.
	CeilingClients int
}

// SQSResult is what SQSDrain measured besides the drain's rate (Result.TasksPerSec).
type SQSResult struct {
	Endpoint string `json:"endpoint,omitempty"`
	// Queue is the SQS queue the task ids went through.
	Queue string `json:"sqs_queue"`
	// What the enqueuer and the worker's source did. In a sound run each task's id is
	// sent, received and deleted once; SQS may deliver a message twice (a duplicate is
	// deleted without running its task again).
	Sent             int64 `json:"sent"`
	Received         int64 `json:"received"`
	Deleted          int64 `json:"deleted"` // after the task's outcome committed
	DeletedDuplicate int64 `json:"deleted_duplicate"`
	Failures         int64 `json:"failures"` // failed sends and deletes
	// Ceiling is the same endpoint's raw throughput, measured right after the drain.
	Ceiling Ceiling `json:"ceiling"`
	// Ratio is the drain's tasks/s over the ceiling's messages/s.
	Ratio float64 `json:"ratio"`
	// ClientCPUPerTask is the CPU (user + system, µs) this process spent per task during
	// the drain: the worker, the enqueuer and their SQS clients (PostgreSQL's and the
	// endpoint's own CPU are not in it). Compare with Ceiling.ClientCPUPerMsg.
	ClientCPUPerTask float64 `json:"client_cpu_us_per_task"`
}

// Ceiling is a raw SQS measurement (sqsceiling): messages sent, received and deleted in
// batches of 10 by Clients senders and as many receivers, with nothing else in the way.
type Ceiling struct {
	Messages   int     `json:"messages"`
	Clients    int     `json:"clients"`
	Seconds    float64 `json:"seconds"`
	MsgsPerSec float64 `json:"msgs_per_sec"`
	// ClientCPUPerMsg is the CPU (µs) this process, the ceiling's SQS client, spent per
	// message sent, received and deleted.
	ClientCPUPerMsg float64 `json:"client_cpu_us_per_msg"`
}

// SQSDrain is the drain of SQS mode, then the ceiling it is measured against, on the
// same endpoint. It creates SQS queues with unique names, inserts cfg.Tasks noop tasks
// (not timed), and starts the real worker runtime with an SQS Source, as `rota worker
// --mode sqs` does with its defaults, long polling the empty queue. The clock starts
// with one Enqueuer, as `rota serve --mode sqs` runs it, and stops once every task is
// SUCCEEDED (the worker has recorded every success) and every message deleted; then
// the database is checked. Last, cfg.Tasks messages go through a fresh queue with
// nothing but SQS calls (sqsceiling.Measure). The queues are deleted at the end, also
// on failure.
func SQSDrain(ctx context.Context, t *Target, cfg SQSConfig) (res *Result, err error) {
	n := int64(cfg.Tasks)
	switch {
	case n <= 0:
		return nil, fmt.Errorf("sqs: tasks must be positive, got %d", cfg.Tasks)
	case cfg.Client == nil:
		return nil, errors.New("sqs: an SQS client is required")
	case cfg.CeilingClients < 0:
		return nil, fmt.Errorf("sqs: ceiling clients must not be negative, got %d", cfg.CeilingClients)
	}
	ceilingClients := cfg.CeilingClients
	if ceilingClients == 0 {
		ceilingClients = DefaultCeilingClients
	}
	if err := t.reset(ctx); err != nil {
		return nil, err
	}
	t.Progress.begin(WorkloadSQS, "create SQS queues", 0)
	queues, err := createBenchSQSQueues(ctx, cfg.Client, t.Queue)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, queues.deleteAll(context.WithoutCancel(ctx))) }()

	t.Progress.begin(WorkloadSQS, "insert backlog", n)
	if err := insertBacklog(ctx, t, cfg.Tasks); err != nil {
		return nil, err
	}
	if err := t.vacuum(ctx); err != nil {
		return nil, err
	}

	drained, err := drainThroughSQS(ctx, t, cfg, queues.queues)
	if err != nil {
		return nil, err
	}
	if err := t.verifySucceeded(ctx, cfg.Tasks); err != nil {
		return nil, err
	}

	t.Progress.begin(WorkloadSQS, "raw SQS ceiling", 0)
	ceilingURL, err := queues.create(ctx, "ceiling")
	if err != nil {
		return nil, err
	}
	cpuBefore := proccpu.Self()
	raw, err := sqsceiling.Measure(ctx, cfg.Client, ceilingURL, cfg.Tasks, ceilingClients)
	if err != nil {
		return nil, err
	}
	ceiling := Ceiling{Messages: raw.Messages, Clients: raw.Clients, Seconds: raw.Elapsed.Seconds(), MsgsPerSec: raw.PerSecond(),
		ClientCPUPerMsg: microsPer(proccpu.Self()-cpuBefore, cfg.Tasks)}

	tasksPerSec := float64(n) / drained.elapsed.Seconds()
	s := drained.sqs
	return &Result{
		Workload:    WorkloadSQS,
		Tasks:       cfg.Tasks,
		Seconds:     drained.elapsed.Seconds(),
		TasksPerSec: tasksPerSec,
		Concurrency: effectiveConcurrency(cfg.Concurrency),
		Worker:      workerCounts(drained.worker),
		SQS: &SQSResult{
			Endpoint:         cfg.Endpoint,
			Queue:            queues.queues.Name(t.Queue),
			Sent:             s.Sent,
			Received:         s.Received,
			Deleted:          s.DeletedSettled,
			DeletedDuplicate: s.DeletedDuplicate,
			Failures:         s.SendFailures + s.DeleteFailures,
			Ceiling:          ceiling,
			Ratio:            tasksPerSec / ceiling.MsgsPerSec,
			ClientCPUPerTask: microsPer(drained.cpu, cfg.Tasks),
		},
	}, nil
}

// sqsDrained is what drainThroughSQS measured.
type sqsDrained struct {
	elapsed time.Duration
	cpu     time.Duration // this process's, over elapsed
	worker  runtime.Stats
	sqs     sqsmode.Stats
}

// drainThroughSQS runs the worker and the enqueuer until the target's backlog is done
// (see SQSDrain) and stops them.
func drainThroughSQS(ctx context.Context, t *Target, cfg SQSConfig, queues *sqsmode.Queues) (*sqsDrained, error) {
	n := int64(cfg.Tasks)
	st := postgres.New(t.Pool)
	defer st.Close()
	// The counters report errors; logs would garble the output.
	logger := slog.New(slog.DiscardHandler)
	metrics := sqsmode.NewMetrics(nil)

	var handled atomic.Int64
	mux := runtime.NewMux()
	handlers.Register(mux, handlers.Config{})
	mux.Use(func(next runtime.Handler) runtime.Handler {
		return runtime.HandlerFunc(func(ctx context.Context, job *runtime.Job) error {
			err := next.Work(ctx, job)
			t.Progress.set(handled.Add(1))
			return err
		})
	})
	src, err := sqsmode.NewSource(sqsmode.SourceConfig{Store: st, Client: cfg.Client, Queues: queues,
		Metrics: metrics, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("new SQS source: %w", err)
	}
	defer src.Close() // on failure too: waits for its background deletes
	// As `rota worker --mode sqs` sets up its runtime (cmd/rota/sqsflags.go).
	w, err := newWorker(st, mux, t.Queue, cfg.Concurrency, func(c *runtime.Config) {
		c.Source = src
		c.ClaimFrom = store.StatusEnqueued
		c.FetchBatch = sqsmode.FetchBatch
		c.WorkerID = src.WorkerID()
		c.LeaseDuration = src.LeaseDuration()
	})
	if err != nil {
		return nil, err
	}
	enq, err := sqsmode.NewEnqueuer(sqsmode.EnqueuerConfig{Store: st, Client: cfg.Client, Queues: queues,
		Metrics: metrics, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("new SQS enqueuer: %w", err)
	}

	run := startWorker(ctx, w)
	t.Progress.begin(WorkloadSQS, "drain through SQS", n)
	enqCtx, stopEnqueuer := context.WithCancel(ctx)
	enqDone := make(chan struct{})
	cpuBefore := proccpu.Self()
	start := time.Now()
	go func() {
		defer close(enqDone)
		enq.Run(enqCtx)
	}()
	progress := func() int64 { return handled.Load() + metrics.Stats().DeletedSettled }
	err = waitFor(ctx, run, time.Millisecond, progress, func() bool {
		return handled.Load() >= n && w.Stats().Succeeded >= n && metrics.Stats().DeletedSettled >= n
	})
	elapsed := time.Since(start)
	cpu := proccpu.Self() - cpuBefore
	stopEnqueuer()
	<-enqDone
	if err = errors.Join(err, run.stop()); err != nil {
		return nil, err
	}
	src.Close() // the last deletes (of late duplicates) count too
	return &sqsDrained{elapsed: elapsed, cpu: cpu, worker: w.Stats(), sqs: metrics.Stats()}, nil
}

// microsPer is d in microseconds per one of n.
func microsPer(d time.Duration, n int) float64 {
	return float64(d.Nanoseconds()) / 1e3 / float64(n)
}
