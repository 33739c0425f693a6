package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/rotaqueue/rota"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// insertBatch is how many jobs one batch insert carries when the drain backlog is built
// (River's own `river bench` uses 5,000 too).
const insertBatch = 5_000

// onStart is called first thing in every handler: seq is the steady-workload sequence
// number carried in the payload, 0 for drain jobs (whose payload is {}).
type onStart func(seq int)

// system is one queue under test, bound to its own database.
type system interface {
	Name() string
	// Reset empties the job tables and VACUUM ANALYZEs them.
	Reset(ctx context.Context) error
	// InsertBacklog inserts n no-op jobs with the system's batch insert.
	InsertBacklog(ctx context.Context, n int) error
	// Analyze runs VACUUM ANALYZE on the job tables (after the backlog is in).
	Analyze(ctx context.Context) error
	// Start starts a client/worker whose handler calls fn; stop stops it gracefully.
	Start(ctx context.Context, fn onStart) (stop func() error, err error)
	// InsertOne inserts one job carrying seq through the running client.
	InsertOne(ctx context.Context, seq int) error
	// Completed counts jobs in the system's success state.
	Completed(ctx context.Context) (int, error)
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// ---- River ----

// riverVariant is one River configuration. Zero durations mean River's defaults.
type riverVariant struct {
	name              string
	fetchCooldown     time.Duration
	fetchPollInterval time.Duration
}

// The River variants. Both run with MaxWorkers = --workers (default 100, Rota's default
// Concurrency) on the default queue; everything not named here is River's default.
//
//   - river-default: FetchCooldown 100ms and FetchPollInterval 1s (River's defaults,
//     river.FetchCooldownDefault / river.FetchPollIntervalDefault in client.go).
//   - river-tuned: FetchCooldown 2ms, FetchPollInterval 20ms: the values River's own
//     benchmark uses "to maximize job throughput" (`river bench`,
//     cmd/river/riverbench/river_bench.go in github.com/riverqueue/river, which says they
//     are "much better than the client's default values"). River's Config doc for
//     FetchCooldown says "Throughput is limited by this value". That benchmark also sets
//     MaxWorkers 2,000; here MaxWorkers stays equal to Rota's Concurrency.
var riverVariants = map[string]riverVariant{
	"default": {name: "river-default"},
	"tuned":   {name: "river-tuned", fetchCooldown: 2 * time.Millisecond, fetchPollInterval: 20 * time.Millisecond},
}

// benchArgs is the River job: kind "noop", payload {} for drain jobs and {"seq":n} for
// steady ones, as for Rota.
type benchArgs struct {
	Seq int `json:"seq,omitempty"`
}

func (benchArgs) Kind() string { return "noop" }

type riverWorker struct {
	river.WorkerDefaults[benchArgs]
	fn onStart
}

func (w *riverWorker) Work(_ context.Context, job *river.Job[benchArgs]) error {
	w.fn(job.Args.Seq)
	return nil
}

type riverSystem struct {
	v       riverVariant
	pool    *pgxpool.Pool
	workers int
	client  *river.Client[pgx.Tx] // the running client (nil between runs)
	// inserter is an insert-only client for building the drain backlog before the
	// worker client exists.
	inserter *river.Client[pgx.Tx]
}

func newRiverSystem(v riverVariant, pool *pgxpool.Pool, workers int) (*riverSystem, error) {
	ins, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: discardLogger()})
	if err != nil {
		return nil, err
	}
	return &riverSystem{v: v, pool: pool, workers: workers, inserter: ins}, nil
}

func migrateRiver(ctx context.Context, pool *pgxpool.Pool) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: discardLogger()})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

func (s *riverSystem) Name() string { return s.v.name }

func (s *riverSystem) config(fn onStart) *river.Config {
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverWorker{fn: fn})
	return &river.Config{
		FetchCooldown:     s.v.fetchCooldown,     // 0 = River's default
		FetchPollInterval: s.v.fetchPollInterval, // 0 = River's default
		Logger:            discardLogger(),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: s.workers}},
		Workers:           workers,
	}
}

func (s *riverSystem) Reset(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `TRUNCATE river_job`); err != nil {
		return err
	}
	return s.Analyze(ctx)
}

func (s *riverSystem) Analyze(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `VACUUM ANALYZE river_job`)
	return err
}

func (s *riverSystem) InsertBacklog(ctx context.Context, n int) error {
	params := make([]river.InsertManyParams, insertBatch)
	for i := range params {
		params[i] = river.InsertManyParams{Args: benchArgs{}}
	}
	for done := 0; done < n; done += insertBatch {
		batch := params[:min(insertBatch, n-done)]
		if _, err := s.inserter.InsertManyFast(ctx, batch); err != nil {
			return fmt.Errorf("river insert: %w", err)
		}
	}
	return nil
}

func (s *riverSystem) Start(ctx context.Context, fn onStart) (func() error, error) {
	c, err := river.NewClient(riverpgxv5.New(s.pool), s.config(fn))
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	s.client = c
	return func() error {
		s.client = nil
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return c.Stop(stopCtx)
	}, nil
}

func (s *riverSystem) InsertOne(ctx context.Context, seq int) error {
	_, err := s.client.Insert(ctx, benchArgs{Seq: seq}, nil)
	return err
}

func (s *riverSystem) Completed(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&n)
	return n, err
}

// ---- Rota ----

type rotaSystem struct {
	pool        *pgxpool.Pool
	client      *rota.Client
	concurrency int
}

func migrateRota(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := postgres.MigrateUp(ctx, pool)
	return err
}

func newRotaSystem(pool *pgxpool.Pool, concurrency int) *rotaSystem {
	return &rotaSystem{pool: pool, client: rota.NewPostgresClient(pool), concurrency: concurrency}
}

func (s *rotaSystem) Name() string { return "rota" }

func (s *rotaSystem) Reset(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `TRUNCATE rota.tasks CASCADE`); err != nil {
		return err
	}
	return s.Analyze(ctx)
}

func (s *rotaSystem) Analyze(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `VACUUM ANALYZE rota.tasks, rota.task_attempts, rota.dead_letters`)
	return err
}

func (s *rotaSystem) InsertBacklog(ctx context.Context, n int) error {
	params := make([]rota.EnqueueParams, insertBatch)
	for i := range params {
		params[i] = rota.EnqueueParams{Kind: "noop"}
	}
	for done := 0; done < n; done += insertBatch {
		if _, err := s.client.EnqueueMany(ctx, params[:min(insertBatch, n-done)]); err != nil {
			return fmt.Errorf("rota insert: %w", err)
		}
	}
	return nil
}

type seqPayload struct {
	Seq int `json:"seq"`
}

func (s *rotaSystem) Start(ctx context.Context, fn onStart) (func() error, error) {
	mux := rota.NewMux()
	mux.HandleFunc("noop", func(_ context.Context, job *rota.Job) error {
		// Drain jobs carry {}; decode only what the steady workload sends, as River
		// decodes its args before Work.
		var p seqPayload
		if len(job.Task.Payload) > 2 {
			if err := json.Unmarshal(job.Task.Payload, &p); err != nil {
				return err
			}
		}
		fn(p.Seq)
		return nil
	})
	w, err := s.client.NewWorker(rota.WorkerConfig{Mux: mux, Concurrency: s.concurrency, Logger: discardLogger()})
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

func (s *rotaSystem) InsertOne(ctx context.Context, seq int) error {
	_, err := s.client.Enqueue(ctx, rota.EnqueueParams{Kind: "noop", Payload: seqPayload{Seq: seq}})
	return err
}

func (s *rotaSystem) Completed(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM rota.tasks WHERE status = 'SUCCEEDED'`).Scan(&n)
	return n, err
}
