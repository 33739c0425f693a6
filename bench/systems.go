package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"golang.org/x/sync/errgroup"

	"github.com/rotaqueue/rota"
	"github.com/rotaqueue/rota/internal/metrics"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// insertBatch is how many jobs one batch insert carries when the drain backlog is built
// (River's own `river bench` uses 5,000 too).
const insertBatch = 5_000

// backlogInserters is how many batch inserts run at once while a backlog is built: a
// 1M-job backlog is 200 batches, and one at a time leaves the server idle between them.
const backlogInserters = 4

// hooks are what a running system calls back. seq is the steady-workload sequence number
// carried in the payload, 0 for drain jobs (whose payload is {}).
type hooks struct {
	// started is called first thing in every handler.
	started func(seq int)
	// succeeded, when set, is called once the job's success has committed: Rota's
	// Observer.OutcomeRecorded (called after the RecordOutcomes statement returned),
	// River's EventKindJobCompleted subscription (sent by its completer after its
	// UPDATE returned). nil: not observed (drains count rows in the database instead).
	succeeded func(seq int)
	// claimed, when set, is called for each claimed job before its handler runs, with when
	// its claim statement started (the database's now(), on the same machine's clock) and
	// when the claim returned to the worker. Rota only: it splits the pickup (stages.go).
	claimed func(seq int, claimStarted, claimReturned time.Time)
	// commitDone, when set, is called after each outcome write (Rota's
	// Observer.CommitDone) with its size and duration (stages.go).
	commitDone func(n int, took time.Duration)
}

// system is one queue configuration under test, bound to its own database.
type system interface {
	Name() string
	// IsRota tells Rota's variants from River's (ratios divide one by the other).
	IsRota() bool
	database() *database
	// Reset empties the job tables and VACUUM ANALYZEs them.
	Reset(ctx context.Context) error
	// InsertBacklog inserts n no-op jobs with the system's batch insert, a few batches at
	// once; progress is called after each batch with the jobs inserted so far.
	InsertBacklog(ctx context.Context, n int, progress func(done int)) error
	// Analyze runs VACUUM ANALYZE on the job tables (after the backlog is in).
	Analyze(ctx context.Context) error
	// Start starts a client/worker on the system's own pool; stop stops it gracefully.
	Start(ctx context.Context, h hooks) (stop func() error, err error)
	// NewProducer returns an insert function for the steady workload: one job carrying
	// seq per call, each its own insert call (and transaction), through a client on a
	// pool of its own of conns connections, as an application's would be.
	NewProducer(ctx context.Context, conns int) (insert func(ctx context.Context, seq int) error, closeFn func(), err error)
	// Completed counts jobs in the system's success state.
	Completed(ctx context.Context) (int, error)
	// Tables are the job tables (for autovacuum_enabled and block statistics).
	Tables() []string
	// ClaimQuery is a PostgreSQL regular expression matching the claim statement's text
	// in pg_stat_statements.
	ClaimQuery() string
	// ClaimIndex is the index the claim walks, as pg_statio_user_indexes names it.
	ClaimIndex() string
	// Settings describes the configuration, for the report.
	Settings() string
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// insertInBatches calls insert for consecutive batches of at most batch of n jobs, up to
// workers at once, and progress after each.
func insertInBatches(ctx context.Context, n, batch, workers int, insert func(ctx context.Context, size int) error, progress func(done int)) error {
	var next, done atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range workers {
		g.Go(func() error {
			for {
				from := int(next.Add(int64(batch))) - batch
				if from >= n {
					return nil
				}
				size := min(batch, n-from)
				if err := insert(gctx, size); err != nil {
					return err
				}
				d := done.Add(int64(size))
				if progress != nil {
					progress(int(d))
				}
			}
		})
	}
	return g.Wait()
}

// ---- River ----

// riverVariant is one River configuration. Zero values mean River's defaults (and
// maxWorkers 0 means --workers).
type riverVariant struct {
	name              string
	fetchCooldown     time.Duration
	fetchPollInterval time.Duration
	maxWorkers        int
}

// The River variants, on the default queue; everything not named here is River's default.
//
//   - river-default: FetchCooldown 100ms and FetchPollInterval 1s (River's defaults,
//     river.FetchCooldownDefault / river.FetchPollIntervalDefault in client.go),
//     MaxWorkers --workers.
//   - river-tuned: River's benchmark fetch settings (below) with MaxWorkers --workers:
//     both systems run at most the same number of handlers at once.
//   - river-best: River at its own published benchmark settings, `river bench`
//     (cmd/river/riverbench/river_bench.go in github.com/riverqueue/river): MaxWorkers
//     2,000 on the default queue, FetchCooldown 2ms, FetchPollInterval 20ms ("When
//     benchmarking to maximize job throughput these numbers have an outsized effect on
//     results ... Much better than the client's default values"). River's Config doc
//     for FetchCooldown says "Throughput is limited by this value". That command opens
//     its pool with pgxpool's defaults (MaxConns max(4, NumCPU), rivercli's
//     openPgxV5DBPool); here every River variant gets --max-conns (16), which is more.
var riverVariants = map[string]riverVariant{
	"default": {name: "river-default"},
	"tuned":   {name: "river-tuned", fetchCooldown: 2 * time.Millisecond, fetchPollInterval: 20 * time.Millisecond},
	"best":    {name: "river-best", fetchCooldown: 2 * time.Millisecond, fetchPollInterval: 20 * time.Millisecond, maxWorkers: 2_000},
}

// benchArgs is the River job: kind "noop", payload {} for drain jobs and {"seq":n} for
// steady ones, as for Rota.
type benchArgs struct {
	Seq int `json:"seq,omitempty"`
}

func (benchArgs) Kind() string { return "noop" }

type riverWorker struct {
	river.WorkerDefaults[benchArgs]
	fn func(seq int)
}

func (w *riverWorker) Work(_ context.Context, job *river.Job[benchArgs]) error {
	w.fn(job.Args.Seq)
	return nil
}

type riverSystem struct {
	v          riverVariant
	db         *database
	pool       *pgxpool.Pool // the worker client's own pool
	maxWorkers int
	conns      int
	// inserter is an insert-only client on the harness's pool, for building backlogs.
	inserter *river.Client[pgx.Tx]
}

func newRiverSystem(ctx context.Context, v riverVariant, db *database, workers, conns int) (*riverSystem, error) {
	ins, err := river.NewClient(riverpgxv5.New(db.mon), &river.Config{Logger: discardLogger()})
	if err != nil {
		return nil, err
	}
	pool, err := db.newPool(ctx, conns)
	if err != nil {
		return nil, err
	}
	return &riverSystem{v: v, db: db, pool: pool, maxWorkers: cmp.Or(v.maxWorkers, workers), conns: conns, inserter: ins}, nil
}

func migrateRiver(ctx context.Context, pool *pgxpool.Pool) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: discardLogger()})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

func (s *riverSystem) Name() string        { return s.v.name }
func (s *riverSystem) IsRota() bool        { return false }
func (s *riverSystem) database() *database { return s.db }
func (s *riverSystem) Tables() []string    { return []string{"river_job"} }
func (s *riverSystem) ClaimQuery() string  { return riverClaimQuery }

// ClaimIndex: JobGetAvailable walks river_job_prioritized_fetching_index (state, queue,
// priority, scheduled_at, id), which every state change also writes to.
func (s *riverSystem) ClaimIndex() string { return "river_job_prioritized_fetching_index" }
func (s *riverSystem) Settings() string {
	return fmt.Sprintf("MaxWorkers=%d FetchCooldown=%s FetchPollInterval=%s pool MaxConns=%d",
		s.maxWorkers, cmp.Or(s.v.fetchCooldown, river.FetchCooldownDefault), cmp.Or(s.v.fetchPollInterval, river.FetchPollIntervalDefault), s.conns)
}

// riverClaimQuery matches River's claim, JobGetAvailable (riverpgxv5's dbsqlc/river_job.sql).
const riverClaimQuery = `JobGetAvailable|locked_jobs`

func (s *riverSystem) config(fn func(seq int)) *river.Config {
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverWorker{fn: fn})
	return &river.Config{
		FetchCooldown:     s.v.fetchCooldown,     // 0 = River's default
		FetchPollInterval: s.v.fetchPollInterval, // 0 = River's default
		Logger:            discardLogger(),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: s.maxWorkers}},
		Workers:           workers,
	}
}

func (s *riverSystem) Reset(ctx context.Context) error {
	if _, err := s.db.mon.Exec(ctx, `TRUNCATE river_job`); err != nil {
		return err
	}
	return s.Analyze(ctx)
}

func (s *riverSystem) Analyze(ctx context.Context) error {
	_, err := s.db.mon.Exec(ctx, `VACUUM ANALYZE river_job`)
	return err
}

func (s *riverSystem) InsertBacklog(ctx context.Context, n int, progress func(done int)) error {
	params := make([]river.InsertManyParams, insertBatch)
	for i := range params {
		params[i] = river.InsertManyParams{Args: benchArgs{}}
	}
	return insertInBatches(ctx, n, insertBatch, backlogInserters, func(ctx context.Context, size int) error {
		if _, err := s.inserter.InsertManyFast(ctx, params[:size]); err != nil {
			return fmt.Errorf("river insert: %w", err)
		}
		return nil
	}, progress)
}

func (s *riverSystem) Start(ctx context.Context, h hooks) (func() error, error) {
	c, err := river.NewClient(riverpgxv5.New(s.pool), s.config(h.started))
	if err != nil {
		return nil, err
	}
	var events sync.WaitGroup
	if h.succeeded != nil {
		// River's own benchmark counts finished jobs this way too. The channel is sized
		// so that no event is dropped (River drops events for a full subscriber).
		ch, cancel := c.SubscribeConfig(&river.SubscribeConfig{ChanSize: 1 << 20, Kinds: []river.EventKind{river.EventKindJobCompleted}})
		defer func() {
			if err != nil {
				cancel()
			}
		}()
		events.Go(func() {
			for ev := range ch { // closed when the client stops
				var a benchArgs
				if json.Unmarshal(ev.Job.EncodedArgs, &a) == nil {
					h.succeeded(a.Seq)
				}
			}
		})
	}
	if err = c.Start(ctx); err != nil {
		return nil, err
	}
	return func() error {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := c.Stop(stopCtx)
		events.Wait()
		return err
	}, nil
}

func (s *riverSystem) NewProducer(ctx context.Context, conns int) (func(context.Context, int) error, func(), error) {
	pool, err := s.db.newPool(ctx, conns)
	if err != nil {
		return nil, nil, err
	}
	// An insert-only client with the variant's FetchCooldown: River debounces its insert
	// notifications (the wake-up of the fetchers) by the inserting client's FetchCooldown.
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{FetchCooldown: s.v.fetchCooldown, Logger: discardLogger()})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	insert := func(ctx context.Context, seq int) error {
		_, err := c.Insert(ctx, benchArgs{Seq: seq}, nil)
		return err
	}
	return insert, pool.Close, nil
}

func (s *riverSystem) Completed(ctx context.Context) (int, error) {
	var n int
	err := s.db.mon.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&n)
	return n, err
}

// ---- Rota ----

// rotaVariant is one Rota worker configuration: cfg's tuning fields (zero = the
// runtime's defaults, runtime.Default*) and the worker pool's size.
type rotaVariant struct {
	name  string
	cfg   rota.WorkerConfig
	conns int
}

// rotaWorkerPoolConns is the pool `rota worker` opens for one poll-mode queue when
// --db-max-conns is 0: cmd/rota/dbflags.go, workerDefaultConns(1, false) =
// workerBaseConns (4) + workerConnsPerQueue (2) x 1 queue. It is package main there, so
// it is mirrored here.
const rotaWorkerPoolConns = 6

type rotaSystem struct {
	v      rotaVariant
	db     *database
	pool   *pgxpool.Pool // the worker's own pool
	client *rota.Client  // on pool
	// inserter is a client on the harness's pool, for building backlogs.
	inserter *rota.Client
}

func migrateRota(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := postgres.MigrateUp(ctx, pool)
	return err
}

func newRotaSystem(ctx context.Context, v rotaVariant, db *database) (*rotaSystem, error) {
	pool, err := db.newPool(ctx, v.conns)
	if err != nil {
		return nil, err
	}
	return &rotaSystem{v: v, db: db, pool: pool, client: rota.NewPostgresClient(pool), inserter: rota.NewPostgresClient(db.mon)}, nil
}

func (s *rotaSystem) Name() string        { return s.v.name }
func (s *rotaSystem) IsRota() bool        { return true }
func (s *rotaSystem) database() *database { return s.db }
func (s *rotaSystem) Tables() []string    { return []string{"rota.tasks", "rota.task_attempts"} }
func (s *rotaSystem) ClaimQuery() string  { return rotaClaimQuery }

// ClaimIndex: the claim walks tasks_claim_pending, partial on status = 'PENDING', which a
// drain's other statements neither read nor write (a claimed task leaves it).
func (s *rotaSystem) ClaimIndex() string { return "rota.tasks_claim_pending" }
func (s *rotaSystem) Settings() string {
	c := s.v.cfg
	fetchLoops := "default" // poll mode's default has no exported constant
	if c.FetchLoops > 0 {
		fetchLoops = fmt.Sprint(c.FetchLoops)
	}
	return fmt.Sprintf("Concurrency=%d FetchBatch=%d FetchLoops=%s PollInterval=%s CommitBatch=%d CommitInterval=%s pool MaxConns=%d",
		cmp.Or(c.Concurrency, runtime.DefaultConcurrency), cmp.Or(c.FetchBatch, runtime.DefaultFetchBatch), fetchLoops,
		cmp.Or(c.PollInterval, runtime.DefaultPollInterval), cmp.Or(c.CommitBatch, runtime.DefaultCommitBatch),
		cmp.Or(c.CommitInterval, runtime.DefaultCommitInterval), s.v.conns)
}

// rotaClaimQuery matches Rota's poll-mode claim in pg_stat_statements' normalized text
// (constants become $n): the statement of internal/store/postgres/queries/claim_tasks.sql,
// whose UPDATE sets the status and then the worker (RecordOutcomes and the rest only test
// status = 'PROCESSING', which an earlier pattern caught too), or a claim called as a SQL
// function rota.claim* (pg_stat_statements counts the blocks of a function's statements
// in the calling statement).
const rotaClaimQuery = `SET status = (\$[0-9]+|'PROCESSING'),\s+worker_id|FROM rota\.claim`

func (s *rotaSystem) Reset(ctx context.Context) error {
	if _, err := s.db.mon.Exec(ctx, `TRUNCATE rota.tasks, rota.task_attempts CASCADE`); err != nil {
		return err
	}
	return s.Analyze(ctx)
}

func (s *rotaSystem) Analyze(ctx context.Context) error {
	_, err := s.db.mon.Exec(ctx, `VACUUM ANALYZE rota.tasks, rota.task_attempts, rota.dead_letters`)
	return err
}

func (s *rotaSystem) InsertBacklog(ctx context.Context, n int, progress func(done int)) error {
	params := make([]rota.EnqueueParams, insertBatch)
	for i := range params {
		params[i] = rota.EnqueueParams{Kind: "noop"}
	}
	return insertInBatches(ctx, n, insertBatch, backlogInserters, func(ctx context.Context, size int) error {
		if _, err := s.inserter.EnqueueMany(ctx, params[:size]); err != nil {
			return fmt.Errorf("rota insert: %w", err)
		}
		return nil
	}, progress)
}

type seqPayload struct {
	Seq int `json:"seq"`
}

// payloadSeq reads the steady workload's sequence number from a payload ({} = 0).
func payloadSeq(payload []byte) (int, error) {
	var p seqPayload
	if len(payload) <= 2 {
		return 0, nil
	}
	err := json.Unmarshal(payload, &p)
	return p.Seq, err
}

// succeededObserver passes every event on to the worker's Prometheus metrics (as `rota
// worker` has them) and reports each SUCCEEDED outcome to fn: the worker calls
// OutcomeRecorded after the RecordOutcomes statement that wrote it has returned, i.e.
// committed.
type succeededObserver struct {
	runtime.Observer
	fn         func(seq int)
	claimed    func(seq int, claimStarted, claimReturned time.Time)
	commitDone func(n int, took time.Duration)
}

func (o succeededObserver) CommitDone(n int, took time.Duration, err error) {
	o.Observer.CommitDone(n, took, err)
	if o.commitDone != nil && err == nil {
		o.commitDone(n, took)
	}
}

// TaskClaimed reports the claim's start (processing_started_at, the claim statement's
// now()) and return to claimed, for the pickup's stages.
func (o succeededObserver) TaskClaimed(t *store.Task) {
	o.Observer.TaskClaimed(t)
	if o.claimed == nil || t.ProcessingStartedAt == nil {
		return
	}
	if seq, err := payloadSeq(t.Payload); err == nil {
		o.claimed(seq, *t.ProcessingStartedAt, time.Now())
	}
}

func (o succeededObserver) OutcomeRecorded(t *store.Task, status store.Status) {
	o.Observer.OutcomeRecorded(t, status)
	if o.fn == nil || status != store.StatusSucceeded {
		return
	}
	if seq, err := payloadSeq(t.Payload); err == nil {
		o.fn(seq)
	}
}

func (s *rotaSystem) Start(ctx context.Context, h hooks) (func() error, error) {
	mux := rota.NewMux()
	mux.HandleFunc("noop", func(_ context.Context, job *rota.Job) error {
		// Drain jobs carry {}; decode only what the steady workload sends, as River
		// decodes its args before Work.
		seq, err := payloadSeq(job.Task.Payload)
		if err != nil {
			return err
		}
		h.started(seq)
		return nil
	})
	cfg := s.v.cfg // the variant's tuning; every zero field is the runtime's default
	cfg.Mux = mux
	cfg.Logger = discardLogger()
	// `rota worker` always counts its events in Prometheus metrics (cmd/rota/worker.go:
	// Observer: metrics.New(reg)); so does this worker, on a registry of its own.
	cfg.Observer = succeededObserver{Observer: metrics.New(metrics.NewRegistry()), fn: h.succeeded, claimed: h.claimed, commitDone: h.commitDone}
	w, err := s.client.NewWorker(cfg)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	return func() error {
		cancel()
		return <-done
	}, nil
}

func (s *rotaSystem) NewProducer(ctx context.Context, conns int) (func(context.Context, int) error, func(), error) {
	pool, err := s.db.newPool(ctx, conns)
	if err != nil {
		return nil, nil, err
	}
	c := rota.NewPostgresClient(pool)
	insert := func(ctx context.Context, seq int) error {
		_, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "noop", Payload: seqPayload{Seq: seq}})
		return err
	}
	return insert, func() { c.Close(); pool.Close() }, nil
}

func (s *rotaSystem) Completed(ctx context.Context) (int, error) {
	var n int
	err := s.db.mon.QueryRow(ctx, `SELECT count(*) FROM rota.tasks WHERE status = 'SUCCEEDED'`).Scan(&n)
	return n, err
}
